package metadata

import (
	"encoding/json"
	"fmt"
)

// sectionExt holds the cluster objects beyond the key space (controllers,
// workers, ...) as one JSON document. encoding/json writes struct fields in
// declaration order and map keys sorted, so equal states give equal bytes.
const sectionExt = 3

// extState is the state that is not key/value data. Each kind of object is
// a field owned by its own file (members.go, workers.go, ...); every field
// must be JSON-deterministic (structs, slices, maps with string or integer
// keys) and omitted when empty so older snapshots decode unchanged.
type extState struct {
	// Members are the controllers, keyed by raft node id.
	Members map[uint64]*Member `json:"members,omitempty"`
	// RemovedIDs are controller ids that may never be used again.
	RemovedIDs []uint64 `json:"removed_ids,omitempty"`

	// Workers are the registered workers, keyed by worker id (workers.go).
	Workers map[string]*Worker `json:"workers,omitempty"`
	// WorkersControllerEpoch is the highest leader term that committed a
	// worker command; older leaders' worker commands are refused.
	WorkersControllerEpoch uint64 `json:"workers_controller_epoch,omitempty"`

	// Leases are the live leases by id; LeaseNextID is the last id granted
	// (coord.go).
	Leases      map[int64]*Lease `json:"leases,omitempty"`
	LeaseNextID int64            `json:"lease_next_id,omitempty"`
	// KeyLeases maps each ephemeral key to its lease.
	KeyLeases map[string]int64 `json:"key_leases,omitempty"`
	// Locks are the held or awaited locks by key.
	Locks map[string]*Lock `json:"locks,omitempty"`

	// Jobs by name and allocations by id (jobs.go); AssignSeq is the last
	// assignment version handed out (Worker.AssignVersion).
	Jobs      map[string]*Job        `json:"jobs,omitempty"`
	Allocs    map[string]*Allocation `json:"allocs,omitempty"`
	AssignSeq uint64                 `json:"assign_seq,omitempty"`
	// RevokedSerials and RevokedWorkers are the certificate deny-list
	// (certs.go), keyed by serial (lower-case hex) and by worker id.
	RevokedSerials map[string]*Revocation `json:"revoked_serials,omitempty"`
	RevokedWorkers map[string]*Revocation `json:"revoked_workers,omitempty"`
	// JoinTokens are the worker join tokens by id (jointoken.go): only
	// their secrets' hashes.
	JoinTokens map[string]*JoinToken `json:"join_tokens,omitempty"`
	// ACLBootstrapped, ACLPolicies and ACLTokens are the API's access
	// control (acl.go): policies by name, tokens by accessor id with only
	// their secrets' hashes.
	ACLBootstrapped bool                  `json:"acl_bootstrapped,omitempty"`
	ACLPolicies     map[string]*ACLPolicy `json:"acl_policies,omitempty"`
	ACLTokens       map[string]*ACLToken  `json:"acl_tokens,omitempty"`
	// ACLRevision is the index of the last entry that changed the ACLs
	// (acl_fence.go).
	ACLRevision uint64 `json:"acl_revision,omitempty"`
	// ZNodes is the ZooKeeper znode tree by path (znode.go); the root is
	// stored once something changed it. It has its own binary snapshot
	// section (znode_snapshot.go).
	ZNodes zmap `json:"-"`
	// LegacyZNodes is where snapshots written before the znode section
	// kept the tree; decodeExt moves it to ZNodes and encode never writes
	// it.
	LegacyZNodes map[string]*ZNode `json:"znodes,omitempty"`

	// leasesBy counts live leases per creator (coord.go); derived from
	// Leases and never serialised.
	leasesBy map[string]int
	// idx is derived from Allocs and never serialised.
	idx jobIndex
	// assigns remembers the latest AssignSeq bumps (assignlog.go); never
	// serialised.
	assigns assignLog
	// ephemerals are the ephemeral znode paths per session (znode.go);
	// derived from ZNodes and never serialised.
	ephemerals map[int64]map[string]struct{}
	// zkids are the sorted child names of each znode that has children
	// (znode_kids.go), so getChildren is a walk, not a scan; derived from
	// ZNodes and never serialised.
	zkids map[string]kidSet
	// reapable are the paths of container and TTL znodes, the only ones
	// the leader's reaper may delete, so a pass reads those instead of
	// walking the tree (ZooKeeper's DataTree keeps the same two sets);
	// derived from ZNodes and never serialised.
	reapable map[string]struct{}
	// acls are the stored ACLs other znodes share (znode_intern.go), by
	// their encoding; never serialised.
	acls map[string][]ZNodeACL
}

func (e *extState) encode() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// Only unsupported types fail to marshal; that is a programming error
		// caught by every snapshot test.
		panic(fmt.Sprintf("metadata: encode ext state: %v", err))
	}
	return b
}

func decodeExt(p []byte) (extState, error) {
	var e extState
	if err := json.Unmarshal(p, &e); err != nil {
		return extState{}, corrupt("ext section: %v", err)
	}
	e.ZNodes, e.LegacyZNodes = zmapOf(e.LegacyZNodes), nil
	if err := e.checkCoord(); err != nil {
		return extState{}, err
	}
	if err := e.checkJobs(); err != nil {
		return extState{}, err
	}
	if err := e.checkRevocations(); err != nil {
		return extState{}, err
	}
	if err := e.checkJoinTokens(); err != nil {
		return extState{}, err
	}
	if err := e.checkACL(); err != nil {
		return extState{}, err
	}
	if err := e.checkZNodes(); err != nil {
		return extState{}, err
	}
	for _, l := range e.Leases {
		e.countLease(l.Creator, 1)
	}
	return e, nil
}

// clone deep-copies e through its encodings (tests use it to rebuild the
// derived indexes from scratch).
func (e *extState) clone() extState {
	c, err := decodeExt(e.encode())
	if err == nil && e.ZNodes.len() > 0 {
		var m map[string]*ZNode
		if m, err = decodeZNodes(encodeZNodes(e.ZNodes.plain())); err == nil {
			c.ZNodes = zmapOf(m)
			err = c.checkZNodes()
		}
	}
	if err != nil {
		panic(fmt.Sprintf("metadata: clone ext state: %v", err))
	}
	return c
}
