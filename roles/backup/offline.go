package backup

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/raftlog"
)

// SnapshotIndex returns the applied index a state-machine snapshot holds.
func SnapshotIndex(data []byte) (uint64, error) {
	st, err := metadata.Restore(data)
	if err != nil {
		return 0, fmt.Errorf("read back snapshot: %w", err)
	}
	return st.AppliedIndex(), nil
}

func raftDir(dataDir string) string { return filepath.Join(dataDir, "raft") }

// writeFreshLog creates a raft log in dir that starts at a snapshot: the
// layout a follower has right after installing one. Both restore and
// recover produce such a log.
func writeFreshLog(dir string, nodeID uint64, clusterID string, hs *pb.HardState, snap *pb.Snapshot) error {
	st, err := raftlog.Open(raftlog.Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("create raft log %s: %w", dir, err)
	}
	defer st.Close()
	if err := st.Save(hs, nil, snap, true); err != nil {
		return fmt.Errorf("write snapshot into %s: %w", dir, err)
	}
	if err := st.SetMeta("node_id", strconv.FormatUint(nodeID, 10)); err != nil {
		return err
	}
	if clusterID != "" {
		if err := st.SetMeta("cluster_id", clusterID); err != nil {
			return err
		}
	}
	return nil
}

func snapshotAt(index, term uint64, voters []uint64, data []byte) *pb.Snapshot {
	return &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
		Index: new(index), Term: new(term), ConfState: &pb.ConfState{Voters: voters}}}
}

// RestoreDataDir builds the data dir of one controller of a NEW cluster from
// a backup: same data, the membership given by peers, no cluster id (the new
// cluster's first leader picks one). Run it for every controller with the
// same backup and peers, then start them with the same --controllers.
func RestoreDataDir(dataDir string, nodeID uint64, peers map[uint64]string, b *Backup) error {
	if _, ok := peers[nodeID]; !ok {
		return fmt.Errorf("--controllers does not list node %d", nodeID)
	}
	if entries, err := os.ReadDir(raftDir(dataDir)); err == nil && len(entries) > 0 {
		return fmt.Errorf("data dir %s already holds a raft log; restore into an empty data dir", dataDir)
	}
	st, err := metadata.Restore(b.Data)
	if err != nil {
		return fmt.Errorf("read backup state: %w", err)
	}
	ids := slices.Sorted(maps.Keys(peers))
	members := make([]metadata.Member, 0, len(ids))
	for _, id := range ids {
		members = append(members, metadata.Member{ID: id, Address: peers[id]})
	}
	st.ResetForNewCluster(members, false)
	data, err := st.Snapshot()
	if err != nil {
		return err
	}
	idx, term := b.Header.Index, b.Header.Term
	hs := &pb.HardState{Term: new(term), Commit: new(idx)}
	return writeFreshLog(raftDir(dataDir), nodeID, "", hs, snapshotAt(idx, term, ids, data))
}

// RecoverResult says what RecoverDataDir did.
type RecoverResult struct {
	NodeID  uint64
	Address string
	Index   uint64
	Term    uint64
	// BeyondCommit counts kept entries past the last commit index this
	// controller knew of: they may never have been committed.
	BeyondCommit uint64
	OldDir       string // where the previous raft log was moved
}

// RecoverDataDir rewrites a stopped controller's data dir so that it is the
// only voter of its cluster, keeping every entry it knows to be committed.
// It is the last resort after losing a majority for good (like etcd's
// --force-new-cluster): entries that only the lost controllers had are gone.
// The previous raft log is kept beside the new one.
func RecoverDataDir(dataDir, clusterAddr string) (*RecoverResult, error) {
	dir := raftDir(dataDir)
	st, err := raftlog.Open(raftlog.Options{Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("open raft log %s (is the controller stopped?): %w", dir, err)
	}
	res, state, hs, err := replayCommitted(st)
	st.Close()
	if err != nil {
		return nil, err
	}
	if m, ok := state.Member(res.NodeID); ok && clusterAddr == "" {
		clusterAddr = m.Address
	}
	if clusterAddr == "" {
		return nil, fmt.Errorf("the log does not say where controller %d listens; pass --cluster-addr", res.NodeID)
	}
	res.Address = clusterAddr
	state.ResetForNewCluster([]metadata.Member{{ID: res.NodeID, Address: clusterAddr}}, true)
	data, err := state.Snapshot()
	if err != nil {
		return nil, err
	}
	tmp := dir + ".recover"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	newHS := &pb.HardState{Term: new(hs.GetTerm()), Commit: new(res.Index)}
	if err := writeFreshLog(tmp, res.NodeID, state.ClusterID(), newHS, snapshotAt(res.Index, res.Term, []uint64{res.NodeID}, data)); err != nil {
		return nil, err
	}
	res.OldDir = fmt.Sprintf("%s.before-recover-%s", dir, time.Now().UTC().Format("20060102T150405"))
	if err := os.Rename(dir, res.OldDir); err != nil {
		return nil, fmt.Errorf("move old raft log aside: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("install recovered raft log: %w", err)
	}
	return res, nil
}

// replayCommitted rebuilds the state machine from the snapshot and the
// committed log, as a restarting controller would.
func replayCommitted(st *raftlog.Store) (*RecoverResult, *metadata.State, *pb.HardState, error) {
	idStr, ok, err := st.GetMeta("node_id")
	if err != nil || !ok {
		return nil, nil, nil, fmt.Errorf("data dir has no node id (not a controller data dir?): %v", err)
	}
	nodeID, err := strconv.ParseUint(idStr, 10, 64)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bad node id %q in data dir", idStr)
	}
	hs, _, err := st.InitialState()
	if err != nil {
		return nil, nil, nil, err
	}
	snap, err := st.Snapshot()
	if err != nil {
		return nil, nil, nil, err
	}
	state := metadata.New()
	if !raft.IsEmptySnap(snap) {
		if state, err = metadata.Restore(snap.GetData()); err != nil {
			return nil, nil, nil, fmt.Errorf("restore snapshot: %w", err)
		}
	}
	// Every entry this controller holds is kept, not only those it knows
	// to be committed: an entry past its persisted commit index may have
	// been committed (and acknowledged) by the lost majority, and the
	// commit index itself is written without fsync.
	commit := hs.GetCommit()
	last, _ := st.LastIndex()
	res := &RecoverResult{NodeID: nodeID, Index: state.AppliedIndex()}
	if last > state.AppliedIndex() {
		ents, err := st.Entries(state.AppliedIndex()+1, last+1, ^uint64(0))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read committed entries: %w", err)
		}
		for _, e := range ents {
			if err := replayEntry(state, e); err != nil {
				return nil, nil, nil, err
			}
		}
		res.Index = last
	}
	if res.Index == 0 {
		return nil, nil, nil, fmt.Errorf("nothing was ever committed in this data dir; start a new cluster instead")
	}
	if res.Term, err = st.Term(res.Index); err != nil {
		return nil, nil, nil, fmt.Errorf("term of index %d: %w", res.Index, err)
	}
	if last > commit {
		res.BeyondCommit = last - commit
	}
	return res, state, hs, nil
}

func replayEntry(state *metadata.State, e *pb.Entry) error {
	if e.GetType() != pb.EntryType_EntryConfChange {
		// The same rule as the live replicas, or the rebuilt state diverges.
		state.ApplyEntry(e.GetIndex(), e.GetTerm(), entryData(e))
		return nil
	}
	cc := &pb.ConfChange{}
	if err := proto.Unmarshal(e.GetData(), cc); err != nil {
		return fmt.Errorf("decode conf change at %d: %w", e.GetIndex(), err)
	}
	op, m := raftlog.MemberChange(cc)
	return state.ApplyMemberChange(e.GetIndex(), op, m)
}

// entryData is the command of a normal entry; v2 conf changes carry none.
func entryData(e *pb.Entry) []byte {
	if e.GetType() == pb.EntryType_EntryNormal {
		return e.GetData()
	}
	return nil
}
