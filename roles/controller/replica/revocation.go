package replica

import (
	"crypto/x509"
	"fmt"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// deniedCert is the transport's revocation check: a certificate whose
// serial, or whose worker, is on the replicated deny-list is refused. It
// reads this replica's applied state, so a revocation takes effect on each
// controller as soon as that controller applies it.
func (c *Replica) deniedCert(cert *x509.Certificate, id transport.Identity) error {
	worker := ""
	if id.Role == transport.RoleWorker {
		worker = id.ID
	}
	st := c.State()
	if st == nil {
		// The listener is up a moment before the state is loaded; Open
		// sweeps the connections accepted meanwhile once it is
		// (revocationsChanged), and replayed revocations sweep again.
		return nil
	}
	serial := metadata.SerialHex(cert.SerialNumber)
	if r, ok := st.Revoked(serial, worker); ok {
		if r.Worker != "" {
			return fmt.Errorf("%w: %s (serial %s): worker %s is revoked", transport.ErrRevoked, id, serial, r.Worker)
		}
		return fmt.Errorf("%w: %s (serial %s)", transport.ErrRevoked, id, serial)
	}
	return nil
}

// revocationsChanged ends the open connections of certificates the
// deny-list now refuses (new handshakes are refused already). It runs off
// the apply loop: closing connections must not delay apply.
func (c *Replica) revocationsChanged() {
	if q, ok := c.tr.(*transport.QUIC); ok {
		go q.CloseDenied()
	}
}
