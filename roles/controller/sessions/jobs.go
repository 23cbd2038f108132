package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/transport"
)

// The leader's side of running work on workers. Assignments are
// level-triggered: a worker is sent its complete set of allocations
// whenever the replicated set changes (pushLoop) or a heartbeat shows it
// has an older version, so a lost message or a failover only delays it.
// Reports are batched from every worker into one raft entry (reportLoop)
// and acknowledged once committed; a worker repeats them until then.

// streamWriter serialises writes to one worker stream: replies from the
// stream's goroutine, assignments from the pusher, log requests from HTTP
// handlers.
type streamWriter struct {
	mu  sync.Mutex
	s   transport.Stream
	buf []byte
	dl  time.Time
}

func (w *streamWriter) write(m transport.WorkerMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := transport.AppendWorkerFrame(w.buf[:0], m)
	if err != nil {
		return err
	}
	if cap(b) <= 64<<10 {
		w.buf = b
	}
	if now := time.Now(); w.dl.Sub(now) < workerWriteTimeout/2 {
		w.dl = now.Add(workerWriteTimeout)
		_ = w.s.SetWriteDeadline(w.dl)
	}
	_, err = w.s.Write(b)
	return err
}

type pendingReport struct {
	msg *transport.AllocReport
	out *streamWriter
}

type sessionJobs struct {
	pushKick   chan struct{}
	reportKick chan struct{}
	// pushIDs are sessions to look at in the next pass although no entry
	// changed an assignment (a new stream, a worker that missed a push);
	// guarded by Manager.mu.
	pushIDs map[string]struct{}

	mu      sync.Mutex
	reports []pendingReport
	nextReq uint64
	logWait map[uint64]logWaiter
}

type logWaiter struct {
	worker string
	ch     chan *transport.LogData
}

func (j *sessionJobs) init() {
	j.pushKick = make(chan struct{}, 1)
	j.reportKick = make(chan struct{}, 1)
	j.logWait = map[uint64]logWaiter{}
	j.pushIDs = map[string]struct{}{}
}

// kick wakes the loop waiting on ch without blocking: a kick already
// pending covers this one.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// AssignmentsChanged tells the pusher that an applied entry may have
// changed what workers must run. It never blocks: kicks coalesce.
func (m *Manager) AssignmentsChanged() { kick(m.jobs.pushKick) }

// pushSoonLocked makes the next pass look at session id; m.mu is held.
func (m *Manager) pushSoonLocked(id string) { m.jobs.pushIDs[id] = struct{}{} }

// pushWriters bounds the assignments written at once.
const pushWriters = 16

// pushLoop sends new assignments to every live session whose replicated
// version moved past what it was sent. Pushes are coalesced: at most one
// pass per 10 ms however many entries commit. A pass visits the sessions
// of the workers whose assignment moved since the last pass (the state
// remembers which) and those marked by pushSoonLocked; it visits every
// session only on a new leader's first pass or when the state no longer
// remembers the changes. So a stream of registrations (each moves the
// registering worker's assignment) costs O(1) each, not O(workers).
func (m *Manager) pushLoop() {
	var lastSeq uint64
	fresh := true
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.jobs.pushKick:
		}
		// Read before the visit: a later bump kicks again.
		changed, seq, known := m.c.State().AssignChangesSince(lastSeq)
		ids, sent, ready := m.pushCandidates(fresh || !known, changed)
		lastSeq, fresh = seq, !ready // a new leader's first pass looks at everyone
		m.pushAll(ids, sent)
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pushCandidates returns the sessions a pass must look at (every one, or
// those marked and those of the changed workers) and the version each was
// last sent.
func (m *Manager) pushCandidates(all bool, changed []string) (ids []string, sent []uint64, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready {
		clear(m.jobs.pushIDs)
		return nil, nil, false
	}
	if all {
		ids, sent = make([]string, 0, len(m.sessions)), make([]uint64, 0, len(m.sessions))
		for id, s := range m.sessions {
			ids, sent = append(ids, id), append(sent, s.sentVersion)
		}
		clear(m.jobs.pushIDs)
		return ids, sent, true
	}
	for _, id := range changed {
		m.jobs.pushIDs[id] = struct{}{}
	}
	for id := range m.jobs.pushIDs {
		if s := m.sessions[id]; s != nil {
			ids, sent = append(ids, id), append(sent, s.sentVersion)
		}
	}
	clear(m.jobs.pushIDs)
	return ids, sent, true
}

// pushAll pushes to each session whose replicated version is newer than
// what it was sent. A few writers at once: a worker whose stream is wedged
// holds up one of them (for up to the write timeout), not everyone's work.
func (m *Manager) pushAll(ids []string, sent []uint64) {
	if len(ids) == 0 {
		return
	}
	vers := m.c.State().AssignVersions(ids) // one read lock for all
	sem := make(chan struct{}, pushWriters)
	var wg sync.WaitGroup
	for i, id := range ids {
		if vers[i] <= sent[i] {
			continue // nothing new for it
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			m.push(id, vers[i])
		})
	}
	wg.Wait()
}

// push sends the worker its assignment if its version ver is newer than
// the last one sent on its current stream.
func (m *Manager) push(id string, ver uint64) {
	m.mu.Lock()
	s := m.sessions[id]
	if s == nil || s.out == nil || s.fencing || !m.ready || ver <= s.sentVersion {
		m.mu.Unlock()
		return
	}
	epoch, out, ctrl, prevSent, skipped := s.epoch, s.out, m.ctrlEpoch, s.sentVersion, s.skippedEmpty
	s.sentVersion = ver
	m.mu.Unlock()
	as, ok := m.c.State().WorkerAssignment(id)
	if !ok || as.Epoch != epoch {
		return
	}
	if len(as.Allocs) == 0 && (prevSent == 0 || skipped) {
		// The worker holds nothing from this stream: an empty set tells it
		// nothing. Its heartbeats will show an older version; that is fine.
		m.mu.Lock()
		if s := m.sessions[id]; s != nil && s.out == out {
			s.skippedEmpty = true
		}
		m.mu.Unlock()
		return
	}
	msg := &transport.Assign{ControllerEpoch: ctrl, Epoch: epoch, Version: as.Version, Specs: map[string]string{}}
	for name, spec := range as.Specs {
		b, err := json.Marshal(spec)
		if err != nil {
			continue
		}
		msg.Specs[name] = string(b)
	}
	for _, a := range as.Allocs {
		msg.Allocs = append(msg.Allocs, transport.AssignedAlloc{ID: a.ID, Job: a.Job, Desired: a.Desired, RestartGen: a.RestartGen})
	}
	err := out.write(msg)
	m.mu.Lock()
	if s := m.sessions[id]; s != nil && s.out == out {
		s.skippedEmpty = false
		if err != nil {
			s.sentVersion = 0
			m.pushSoonLocked(id) // try again at the next pass (not at once: the stream may be dead)
		}
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Debug("could not send an assignment", "worker", id, "err", err)
		return
	}
	m.met.assignments.Inc()
}

func (j *sessionJobs) enqueueReport(msg *transport.AllocReport, out *streamWriter) {
	j.mu.Lock()
	j.reports = append(j.reports, pendingReport{msg: msg, out: out})
	j.mu.Unlock()
	kick(j.reportKick)
}

// maxReportBatch bounds the statuses committed in one entry.
const maxReportBatch = 20000

// reportLoop commits the reports that arrived since the last commit as
// one entry, then acknowledges each. Only a leader commits: a follower's
// queue is dropped (the workers repeat their reports to the next leader).
func (m *Manager) reportLoop() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.jobs.reportKick:
		}
		for m.commitReports() {
		}
	}
}

func (m *Manager) commitReports() bool {
	m.jobs.mu.Lock()
	batch, n := m.jobs.reports, 0
	cut := len(batch)
	for i, r := range batch {
		n += len(r.msg.Statuses)
		if n > maxReportBatch && i > 0 {
			cut = i
			break
		}
	}
	batch, m.jobs.reports = batch[:cut], append([]pendingReport(nil), batch[cut:]...)
	more := len(m.jobs.reports) > 0
	m.jobs.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	m.mu.Lock()
	ctrl, leading := m.ctrlEpoch, m.leading
	m.mu.Unlock()
	if !leading {
		return more
	}
	upd := metadata.AllocUpdates{}
	for _, r := range batch {
		wr := metadata.WorkerReports{Worker: r.msg.WorkerID, Epoch: r.msg.Epoch}
		for _, st := range r.msg.Statuses {
			rep := metadata.AllocReport{ID: st.ID, State: metadata.AllocState(st.State), Restarts: int(st.Restarts),
				Message: st.Message, AtMS: int64(st.AtMS)}
			if st.HasExit {
				code := int(st.ExitCode)
				rep.ExitCode = &code
			}
			wr.Reports = append(wr.Reports, rep)
		}
		upd.Workers = append(upd.Workers, wr)
	}
	_, err := m.c.ProposePayload(m.ctx, metadata.OpAllocUpdate, upd)
	if err != nil {
		if m.ctx.Err() == nil && !m.stopped(err) {
			m.log.Warn("could not commit allocation reports; workers will repeat them", "reports", len(batch), "err", err)
		}
		return more
	}
	m.met.reports.Add(float64(len(batch)))
	for _, r := range batch {
		_ = r.out.write(&transport.ReportAck{ControllerEpoch: ctrl, Seq: r.msg.Seq})
	}
	return more
}

// FetchLog asks a worker for a piece of an allocation's log over its
// session and waits for the answer (at most 10 s). Its failures are
// typed (package fault): not the leader, the worker unreachable, or no
// answer in time.
func (m *Manager) FetchLog(ctx context.Context, worker string, req transport.LogRequest) (*transport.LogData, error) {
	m.mu.Lock()
	s := m.sessions[worker]
	if !m.leading {
		m.mu.Unlock()
		return nil, fault.ErrNotLeader
	}
	if s == nil || s.out == nil {
		m.mu.Unlock()
		return nil, fault.New(fault.Unavailable, "worker_unreachable",
			"worker %s has no live session with this leader; its logs cannot be read now", worker)
	}
	out := s.out
	req.ControllerEpoch = m.ctrlEpoch
	m.mu.Unlock()

	ch := make(chan *transport.LogData, 1)
	m.jobs.mu.Lock()
	m.jobs.nextReq++
	req.ReqID = m.jobs.nextReq
	m.jobs.logWait[req.ReqID] = logWaiter{worker: worker, ch: ch}
	m.jobs.mu.Unlock()
	defer func() {
		m.jobs.mu.Lock()
		delete(m.jobs.logWait, req.ReqID)
		m.jobs.mu.Unlock()
	}()
	if err := out.write(&req); err != nil {
		return nil, fmt.Errorf("ask worker %s for logs: %w", worker, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		return nil, fault.New(fault.NoAnswer, "timeout", "worker %s did not answer the log request", worker)
	}
}

func (j *sessionJobs) deliverLog(worker string, d *transport.LogData) {
	j.mu.Lock()
	w, ok := j.logWait[d.ReqID]
	j.mu.Unlock()
	if ok && w.worker == worker { // a worker answers only its own requests
		select {
		case w.ch <- d:
		default:
		}
	}
}
