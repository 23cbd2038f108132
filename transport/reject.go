package transport

import (
	"errors"
	"log/slog"
	"time"
)

// maxRejectKeys bounds the refusal log's memory (see LogThrottle).
const maxRejectKeys = maxThrottleKeys

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

// rejectLog logs a refusal once per peer and reason per LogThrottleInterval.
type rejectLog struct {
	log      *slog.Logger
	now      func() time.Time
	throttle LogThrottle
}

func newRejectLog(log *slog.Logger) *rejectLog {
	return &rejectLog{log: log, now: time.Now}
}

// warn logs err unless the same peer was refused for reason within the
// interval. The peer is named by the refusal itself (its error names the
// certificate's identity, or why it has none): a handshake callback does
// not know the remote address.
func (r *rejectLog) warn(reason string, err error) {
	if r.throttle.Due(reason+"\x00"+err.Error(), r.now()) {
		r.log.Warn("refused peer", "reason", reason, "err", err)
	}
}
