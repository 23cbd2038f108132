package replica

import "github.com/corral-dev/corral/transport"

// ServeJoin answers workers' join requests (transport.ALPNJoin) on the
// cluster port with h. With an injected transport there is no cluster
// port: it returns false and h is never called.
func (c *Replica) ServeJoin(h transport.JoinHandler) bool {
	q, ok := c.tr.(*transport.QUIC)
	if ok {
		q.HandleJoin(h)
	}
	return ok
}
