package api

import (
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/metadata"
)

// Limits are the bounds this controller checks before it proposes a write
// (docs/API.md, "Limits"; docs/OPERATIONS.md, "Storage quota").
//
// Why at proposal time, and not in the state machine: every controller
// applies the same log and must reach the same state, so Apply may depend
// on nothing but the state and the entry. Each controller's --quota-bytes
// and --max-leases may differ (and change across restarts); if Apply read
// them, one replica could refuse an entry that another applied, and the
// replicas would diverge. So the controller that receives a request
// refuses it before proposing; what it reads (the state's size, the lease
// count) is replicated, deterministic state. The price is that concurrent
// proposals may overshoot a limit by what is in flight, as with etcd's
// --quota-backend-bytes; the state machine's own hard caps
// (metadata.MaxLeases, ...) still hold.
type Limits struct {
	// QuotaBytes refuses writes that add data once the replicated state
	// (metadata.State.Bytes) is larger; 0 means no quota.
	QuotaBytes int64
	// MaxLeases refuses lease grants once this many leases are live; 0
	// means only the state machine's cap (metadata.MaxLeases).
	MaxLeases int
	// MaxLeasesPerToken refuses a token's lease grants once it holds this
	// many live leases; MaxWatchesPerToken bounds a token's open watches
	// on this controller. 0 means no per-token limit (acl_limits.go).
	MaxLeasesPerToken  int
	MaxWatchesPerToken int
}

// DefaultQuotaBytes is the default --quota-bytes: 2 GiB, as etcd's.
const DefaultQuotaBytes int64 = 2 << 30

// DefaultMaxLeases is the default --max-leases.
const DefaultMaxLeases = metadata.MaxLeases

// growsData reports whether op adds user data: only those are refused past
// the quota. Deletes, lease revokes, lock releases, job stops, drains and
// everything workers and the scheduler propose keep working, so space can
// be freed and the cluster keeps running.
func growsData(op metadata.Op) bool {
	switch op.Base() {
	case metadata.OpPut, metadata.OpPutLease, metadata.OpLeaseGrant, metadata.OpLockAcquire, metadata.OpJobRegister:
		return true
	}
	return false
}

// admit checks op against the limits, before it is proposed.
func (s *Server) admit(op metadata.Op) error {
	if !growsData(op) {
		return nil
	}
	st := s.store.State()
	lim := s.cfg.Limits
	if lim.QuotaBytes > 0 {
		if size := st.Bytes(); size > lim.QuotaBytes {
			return noSpace(size, lim.QuotaBytes)
		}
	}
	if op.Base() == metadata.OpLeaseGrant && lim.MaxLeases > 0 {
		if n := st.LeaseCount(); n >= lim.MaxLeases {
			return &apiError{Status: http.StatusTooManyRequests, Code: "too_many_leases",
				Message: fmt.Sprintf("%d leases are live, the limit of this controller (--max-leases %d): revoke leases "+
					"(DELETE /v1/leases/ID) or let them expire, then grant again", n, lim.MaxLeases)}
		}
	}
	return nil
}

// noSpace is the answer to a write refused past the storage quota.
func noSpace(size, quota int64) *apiError {
	return &apiError{Status: http.StatusInsufficientStorage, Code: "no_space",
		Message: fmt.Sprintf("no space: the replicated state is about %d bytes, past this controller's quota of %d bytes "+
			"(--quota-bytes); writes that add data are refused, reads and deletes still work. Free space by deleting keys "+
			"(DELETE /v1/kv/KEY, 'corral kv del') and stopping unneeded jobs; the job part of the estimate shrinks at the "+
			"next snapshot ('corral snapshot save' or --snapshot-every). See docs/OPERATIONS.md, \"Storage quota\"", size, quota)}
}

// QuotaExceeded reports whether st is past quota (the corral_quota_exceeded
// alarm); quota 0 never is.
func QuotaExceeded(st *metadata.State, quota int64) bool {
	return quota > 0 && st.Bytes() > quota
}
