package transport

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// rejectLogInterval is how often one peer's refusals for one reason are
// logged: a misconfigured or hostile peer redials every backoff, and one
// line a minute says as much as a line per handshake.
const rejectLogInterval = time.Minute

// maxRejectKeys bounds the log's memory against a peer that varies what it
// presents; past it the table is forgotten (and logs again) rather than grown.
const maxRejectKeys = 1024

// rejectReason maps a refusal to its label in corral_transport_peer_rejected_total.
func rejectReason(err error) string {
	switch {
	case errors.Is(err, ErrRevoked):
		return RejectRevoked
	case errors.Is(err, ErrForeignCluster):
		return RejectForeignCluster
	case errors.Is(err, ErrRoleNotAllowed):
		return RejectWrongRole
	case errors.Is(err, ErrWrongPeerID):
		return RejectWrongNode
	case errors.Is(err, ErrNoPeerIdentity):
		return RejectNoIdentity
	default:
		return RejectUntrustedCert
	}
}

// rejectLog logs a refusal once per peer and reason per interval.
type rejectLog struct {
	log  *slog.Logger
	now  func() time.Time
	mu   sync.Mutex
	last map[string]time.Time
}

func newRejectLog(log *slog.Logger) *rejectLog {
	return &rejectLog{log: log, now: time.Now, last: map[string]time.Time{}}
}

// warn logs err unless the same peer was refused for reason within the
// interval. The peer is named by the refusal itself (its error names the
// certificate's identity, or why it has none): a handshake callback does
// not know the remote address.
func (r *rejectLog) warn(reason string, err error) {
	key := reason + "\x00" + err.Error()
	now := r.now()
	r.mu.Lock()
	if t, ok := r.last[key]; ok && now.Sub(t) < rejectLogInterval {
		r.mu.Unlock()
		return
	}
	if len(r.last) >= maxRejectKeys {
		clear(r.last)
	}
	r.last[key] = now
	r.mu.Unlock()
	r.log.Warn("refused peer", "reason", reason, "err", err)
}
