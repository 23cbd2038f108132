package replica

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Raft runs with asynchronous storage writes (raft's AsyncStorageWrites):
// the raft loop hands each Ready's log write to the append loop and its
// committed entries to the apply loop, and goes on at once. With the
// write inside the loop, a put waited for up to three fsyncs it did not
// need: the one in progress when its proposal arrived, the follower's
// current one before its own, and the leader's write of newer entries
// before the apply that answers it (docs/PERFORMANCE.md, "Asynchronous
// storage writes"). Now an acknowledgement is stepped into raft the moment
// its write is synced, and entries are applied while the next write runs.
//
// Nothing is acknowledged earlier than before. raft attaches every message
// that depends on a write (a follower's MsgAppResp, a vote, the leader's
// own acknowledgement) to the MsgStorageAppend as a response, delivered
// here only after the write is synced.
//
// Committed entries are applied as soon as raft knows them committed,
// even before this node's own write of them is synced
// (ApplyUnstableCommitted, our patch to raft: third_party/raft/CORRAL.md).
// Committed means a quorum holds the entry durably, so a leader whose own
// fsync is slow answers once two followers of three have theirs: its
// disk's tail leaves the write's path unless two disks are slow at once.
// That is safe because this node's state is rebuilt at restart from its
// snapshot and its log, never kept apart from them: a crash before the
// write loses only what the quorum still holds and the leader sends
// again. The one thing that must not run ahead of the write is a local
// snapshot, which would record an applied index beyond the local log and
// compact entries not written yet; maybeSnapshot waits for the log.

// fifo is a queue with one consumer that never blocks its producers:
// between the raft loop, which must never wait for the disk, and the
// append and apply loops (unbounded: raft bounds what it hands out,
// in-flight appends, uncommitted bytes, bytes being applied), and between
// proposers and proposeLoop (propose_batch.go; writes forwarded by other
// controllers are bounded with pushAll, forward.go).
type fifo[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{} // holds a token while items is not empty
}

func newFIFO[T any]() *fifo[T] { return &fifo[T]{ready: make(chan struct{}, 1)} }

func (q *fifo[T]) push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.signal()
}

// signal leaves the consumer a token (one is enough: take takes all).
func (q *fifo[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pushAll queues vs in order, or nothing when more than limit items
// would then wait.
func (q *fifo[T]) pushAll(vs []T, limit int) bool {
	q.mu.Lock()
	if len(q.items)+len(vs) > limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, vs...)
	q.mu.Unlock()
	q.signal()
	return true
}

// take returns everything queued, oldest first; the queue goes on in
// spare (the slice a previous take returned, done with), or in a new one.
func (q *fifo[T]) take(spare []T) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = spare[:0]
	return items
}

// applyItem is one step of the apply loop: the committed entries of a
// MsgStorageApply, or a snapshot from the leader to install in their place.
type applyItem struct {
	msg  *pb.Message
	snap *pb.Snapshot
}

// appendLoop writes raft's MsgStorageAppends in order. Everything queued
// while a write was syncing goes into the next batch together, with one
// fsync: a group commit. Only then are their responses delivered.
func (c *Replica) appendLoop() error {
	hs, _, err := c.store.InitialState()
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	saved := &pb.HardState{}
	if hs != nil {
		saved.Term, saved.Vote, saved.Commit = hs.Term, hs.Vote, hs.Commit
	}
	for {
		select {
		case <-c.appendQ.ready:
		case <-c.halt:
			return nil
		}
		yieldBeforeWrite()
		msgs := c.appendQ.take(nil)
		for len(msgs) > 0 {
			n := appendGroup(msgs)
			if err := c.persist(msgs[:n], saved); errors.Is(err, errHalted) {
				return nil
			} else if err != nil {
				return err
			}
			msgs = msgs[n:]
		}
	}
}

// yieldBeforeWrite lets the goroutines already waiting for the processor
// run before the append loop's write. The raft loop wakes the append loop
// and the transport's writers for the same Ready, and the writer woken
// first can queue behind the append loop. With one P (the processor pacer
// runs a lightly loaded controller on one, roles/procpace), a goroutine in
// fdatasync keeps it until the runtime's monitor takes it back, which after
// an idle stretch is most of a sync: a leader's appends to its followers
// then left after its own sync instead of before, a quarter of a
// millisecond on a one-client write's path (docs/PERFORMANCE.md, "The
// leader's sends before its own sync"). With more Ps an idle one runs
// them, so there is nothing to yield for.
func yieldBeforeWrite() {
	if runtime.GOMAXPROCS(0) == 1 {
		runtime.Gosched()
	}
}

// errHalted is what persist returns when the replica stops before a write.
var errHalted = errors.New("replica stopped before the write")

// appendGroup is how many leading messages of msgs one batch writes: a
// message carrying a snapshot is written alone, since its install
// replaces the state machine.
func appendGroup(msgs []*pb.Message) int {
	if msgs[0].GetSnapshot() != nil {
		return 1
	}
	n := 1
	for n < len(msgs) && msgs[n].GetSnapshot() == nil {
		n++
	}
	return n
}

// persist writes one group of MsgStorageAppends and delivers their
// responses. saved is the HardState last written, updated in place.
func (c *Replica) persist(group []*pb.Message, saved *pb.HardState) error {
	hs, ents := mergeAppends(group)
	snap := group[0].GetSnapshot()
	sync := syncNeeded(hs, saved, len(ents), snap != nil)
	if h := c.cfg.Hooks.BeforePersist; h != nil && len(ents) > 0 {
		h(ents[len(ents)-1].GetIndex())
	}
	select {
	case <-c.halt:
		// Stopping: a write not made now is one a crash would not have
		// made either, and nothing waits on its responses.
		return errHalted
	default:
	}
	if err := c.store.Save(hs, ents, snap, sync); err != nil {
		return fmt.Errorf("persist raft log: %w", err)
	}
	if hs != nil {
		saved.Term, saved.Vote, saved.Commit = hs.Term, hs.Vote, hs.Commit
	}
	if c.snapWaits.CompareAndSwap(true, false) {
		select {
		case c.logMoved <- struct{}{}:
		default:
		}
	}
	if snap != nil {
		// Before the responses: raft hands out the entries after the
		// snapshot only once it hears the snapshot is stored, so they
		// queue behind its install.
		c.applyQ.push(applyItem{snap: snap})
	}
	for _, m := range group {
		c.deliver(m.GetResponses())
	}
	return nil
}

// syncNeeded says whether a write must be fsynced: for new entries, a new
// term or vote (raft.MustSync), or a snapshot. A HardState that only moves
// the commit index need not be; hs is nil when the write carries none.
func syncNeeded(hs, saved *pb.HardState, ents int, snap bool) bool {
	if hs == nil {
		hs = saved
	}
	return snap || raft.MustSync(hs, saved, ents)
}

// mergeAppends folds consecutive MsgStorageAppends into one write: the
// latest HardState, and the entries as raft's log would hold them (a
// later message's entries replace any earlier ones from their first
// index on, as Storage.Save would).
func mergeAppends(msgs []*pb.Message) (*pb.HardState, []*pb.Entry) {
	var hs *pb.HardState
	var ents []*pb.Entry
	for _, m := range msgs {
		if m.Term != nil || m.Vote != nil || m.Commit != nil {
			hs = &pb.HardState{Term: m.Term, Vote: m.Vote, Commit: m.Commit}
		}
		es := m.GetEntries()
		if len(es) == 0 {
			continue
		}
		if len(ents) == 0 {
			ents = es
			continue
		}
		first, have := es[0].GetIndex(), ents[0].GetIndex()
		if first <= have {
			ents = es // replaces all of them
			continue
		}
		keep := min(first-have, uint64(len(ents)))
		// A fresh slice: raft owns the ones it handed out.
		merged := make([]*pb.Entry, 0, int(keep)+len(es))
		ents = append(append(merged, ents[:keep]...), es...)
	}
	return hs, ents
}

// applyLoop applies committed entries and installs snapshots in the order
// raft handed them out, and owns the local snapshots (snapshot.go).
func (c *Replica) applyLoop() error {
	for {
		select {
		case <-c.applyQ.ready:
			for _, it := range c.applyQ.take(nil) {
				if err := c.applyOne(it); err != nil {
					return err
				}
			}
			c.maybeSnapshot()
		case <-c.logMoved:
			c.maybeSnapshot()
		case r := <-c.snapDone:
			err := c.snapshotDone(r)
			c.stopSnapshotProgress(err) // stopsnapshot.go
			if err != nil {
				return err
			}
		case done := <-c.stopSnapReq:
			c.stopSnapshotRequested(done)
		case <-c.halt:
			return nil
		}
	}
}

func (c *Replica) applyOne(it applyItem) error {
	if it.snap != nil {
		return c.installSnapshot(it.snap)
	}
	if err := c.applyEntries(it.msg.GetEntries()); err != nil {
		return err
	}
	c.deliver(it.msg.GetResponses())
	return nil
}

// deliver hands a local write's responses on once the write is done:
// to raft when they are this node's (MsgStorageAppendResp,
// MsgStorageApplyResp, a leader's own MsgAppResp), else to the peer.
func (c *Replica) deliver(resps []*pb.Message) {
	var remote []*pb.Message
	for _, m := range resps {
		if m.GetTo() != c.cfg.NodeID {
			remote = append(remote, m)
			// raft sends (pre-)vote answers after the write they follow
			if m.GetType() == pb.MsgPreVoteResp && m.GetReject() {
				c.preVoteRefused() // leaderdeath.go
			}
		}
	}
	c.send(remote) // first: a follower's acknowledgement is what the leader waits for
	for _, m := range resps {
		if m.GetTo() != c.cfg.NodeID {
			continue
		}
		if err := c.node.Step(c.ctx, m); err != nil && !errors.Is(err, raft.ErrStopped) && c.ctx.Err() == nil {
			c.log.Warn("raft refused a local storage response", "type", m.GetType().String(), "err", err)
		}
	}
}
