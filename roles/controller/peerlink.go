package controller

import (
	"context"
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/transport"
)

// PeerHTTPSuffix is appended to a controller's cluster address to name its
// peer API listener on an in-memory network (tests), where every listener
// needs its own address; over QUIC both share the cluster port.
const PeerHTTPSuffix = "#api"

// peerTransport is how the API reaches other controllers: over the cluster
// link (QUIC with mutual TLS, or the in-memory network in tests).
func (c *Controller) peerTransport() http.RoundTripper {
	dial := c.r.PeerHTTPDialer()
	if d := c.cfg.PeerHTTPDialer; d != nil {
		dial = func(ctx context.Context, node uint64) (transport.Stream, error) {
			addr, _ := c.r.MemberAddress(node)
			if addr == "" {
				return nil, fmt.Errorf("controller %d: cluster address unknown", node)
			}
			return d.DialStream(ctx, addr+PeerHTTPSuffix)
		}
	}
	if dial == nil {
		return nil
	}
	return transport.NewPeerRoundTripper(dial)
}

// servePeers serves the API to other controllers on the cluster link.
func (c *Controller) servePeers() error {
	ln := c.cfg.PeerHTTPListener
	if ln == nil {
		l, err := c.r.ListenPeerHTTP()
		if err != nil {
			return err
		}
		ln = l
	}
	if ln != nil {
		c.api.ServePeers(transport.NetListener(ln))
	}
	return nil
}
