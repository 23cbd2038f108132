package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ALPNPeerHTTP is the protocol controllers send each other HTTP requests
// on (a follower forwarding to the leader, the dashboard's peer views): it
// runs over the mutual-TLS cluster link, so the caller's token never
// crosses the network in clear and only a controller certificate of this
// cluster can ask.
const ALPNPeerHTTP = "corral-http/1"

// peerHostSuffix names controllers in the URLs of requests that go over
// the cluster link: http://controller-<id>.corral/path.
const (
	peerHostPrefix = "controller-"
	peerHostSuffix = ".corral"
)

// PeerURL is the base URL of controller node over the cluster link, for
// requests sent through a PeerRoundTripper.
func PeerURL(node uint64) string {
	return "http://" + peerHostPrefix + strconv.FormatUint(node, 10) + peerHostSuffix
}

// peerNode parses the node id out of a PeerURL host ("controller-2.corral:80").
func peerNode(hostport string) (uint64, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	s, ok := strings.CutPrefix(host, peerHostPrefix)
	if ok {
		s, ok = strings.CutSuffix(s, peerHostSuffix)
	}
	if !ok {
		return 0, fmt.Errorf("peer request to %q: not a controller URL (use transport.PeerURL)", hostport)
	}
	return parseNodeID(s)
}

// PeerDialFunc opens a stream to controller node on the cluster link.
type PeerDialFunc func(ctx context.Context, node uint64) (Stream, error)

// NewPeerRoundTripper sends HTTP/1.1 requests for PeerURL(node) URLs over
// streams dial opens, keeping idle ones for reuse. Anything but a PeerURL
// is refused, so a request can never fall back to the open network.
func NewPeerRoundTripper(dial PeerDialFunc) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			node, err := peerNode(addr)
			if err != nil {
				return nil, err
			}
			s, err := dial(ctx, node)
			if err != nil {
				return nil, err
			}
			return &streamConn{s: s}, nil
		},
		Proxy:               nil, // never via a proxy from the environment
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		// A stream is already authenticated and encrypted by QUIC's TLS.
		ForceAttemptHTTP2: false,
	}
}

// DialPeerHTTP opens a stream on the cluster link to controller node at
// addr. The handshake refuses a server whose certificate names another
// node.
func (q *QUIC) DialPeerHTTP(ctx context.Context, node uint64, addr string) (Stream, error) {
	ua, err := resolveUDP(ctx, addr)
	if err != nil {
		return nil, err
	}
	conf := q.cfg.TLS.clientConfig(q.onReject, node, ALPNPeerHTTP)
	conn, err := q.dialTracked(ctx, ua, conf)
	if err != nil {
		return nil, fmt.Errorf("dial controller %d at %s: %w", node, addr, err)
	}
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		_ = conn.CloseWithError(errCodeShutdown, "")
		return nil, fmt.Errorf("open stream to controller %d at %s: %w", node, addr, err)
	}
	peer, err := PeerIdentity(conn.ConnectionState().TLS)
	if err != nil {
		_ = conn.CloseWithError(errCodeShutdown, "")
		return nil, fmt.Errorf("controller %d at %s: %w", node, addr, err)
	}
	return &quicStream{conn: conn, s: s, peer: peer}, nil
}

// streamConn is a Stream as a net.Conn, for net/http.
type streamConn struct{ s Stream }

func (c *streamConn) Read(p []byte) (int, error)  { return c.s.Read(p) }
func (c *streamConn) Write(p []byte) (int, error) { return c.s.Write(p) }
func (c *streamConn) Close() error                { return c.s.Close() }
func (c *streamConn) LocalAddr() net.Addr         { return streamAddr("local") }
func (c *streamConn) RemoteAddr() net.Addr        { return streamAddr(c.s.RemoteAddr()) }
func (c *streamConn) SetDeadline(t time.Time) error {
	return errors.Join(c.s.SetReadDeadline(t), c.s.SetWriteDeadline(t))
}
func (c *streamConn) SetReadDeadline(t time.Time) error  { return c.s.SetReadDeadline(t) }
func (c *streamConn) SetWriteDeadline(t time.Time) error { return c.s.SetWriteDeadline(t) }

type streamAddr string

func (a streamAddr) Network() string { return "corral-stream" }
func (a streamAddr) String() string  { return string(a) }

// NetListener adapts l to a net.Listener, so an http.Server can serve the
// streams it accepts. Closing it closes l.
func NetListener(l StreamListener) net.Listener {
	ctx, cancel := context.WithCancel(context.Background())
	return &netListener{l: l, ctx: ctx, cancel: cancel}
}

type netListener struct {
	l      StreamListener
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

func (n *netListener) Accept() (net.Conn, error) {
	s, err := n.l.Accept(n.ctx)
	if err != nil {
		if n.ctx.Err() != nil || errors.Is(err, ErrListenerClosed) {
			return nil, net.ErrClosed
		}
		return nil, err
	}
	return &streamConn{s: s}, nil
}

func (n *netListener) Close() error {
	n.once.Do(n.cancel)
	return n.l.Close()
}

func (n *netListener) Addr() net.Addr { return streamAddr(n.l.Addr()) }
