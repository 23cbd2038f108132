package api

// The views below are what the API shows of the controller's parts; the
// controller fills them (it implements the interfaces in backend.go), so
// the API never sees raft types or another package's internals.

// QuorumHealth says whether the voters can still commit, and how many
// more may fail.
type QuorumHealth struct {
	Voters           int  `json:"voters"`
	Learners         int  `json:"learners"`
	Reachable        int  `json:"reachable"`
	Needed           int  `json:"needed"`
	Healthy          bool `json:"healthy"`
	FailureTolerance int  `json:"failure_tolerance"`
}

// LeaderChange is one change of leader this controller saw.
type LeaderChange struct {
	AtMS int64  `json:"at_ms"`
	From uint64 `json:"from"` // the previous leader (0: none known yet)
	To   uint64 `json:"to"`
	Term uint64 `json:"term"`
}

// LeaseTTL is a lease a keep-alive found alive, with its TTL.
type LeaseTTL struct {
	ID    int64
	TTLMS int64
}

// WorkerStates are the values of a worker's state field. "suspect" exists
// only in the leader's view.
var WorkerStates = []string{"alive", "suspect", "fenced", "draining", "left"}
