// Package sessions keeps the worker sessions at the leader: it registers
// workers, takes their heartbeats, fences the ones that fall silent,
// pushes them their assignments, commits their allocation reports and
// relays log reads to them. Liveness lives only in the leader's memory;
// only transitions (registered, fenced, left) and reports go through raft,
// by way of the Cluster the controller hands in.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// DefaultSessionTimeout is how long a worker may stay silent before the
// leader fences it. The worker's self-fence time derives from the same value.
const DefaultSessionTimeout = transport.DefaultSessionTimeout

// Cluster is what the sessions need of the controller they run in: the
// replicated state, proposals through raft, and who leads. The controller
// implements it; declaring it here keeps this package from depending on
// the controller.
type Cluster interface {
	// State returns the current replicated state (read-only use).
	State() *metadata.State
	// ProposePayload proposes a worker command, waits until this
	// controller applied it and folds the apply error into err.
	ProposePayload(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error)
	// Term returns the current raft term.
	Term() uint64
	// LeaderID returns the leader this controller knows of, 0 if none.
	LeaderID() uint64
	// MemberAddress returns a controller's cluster and HTTP addresses,
	// "" where unknown.
	MemberAddress(id uint64) (cluster, httpAddr string)
	// LinearizableRead returns once this controller, as leader, has
	// applied every entry committed before the call.
	LinearizableRead(ctx context.Context) error
}

// Config is what a Manager is started with besides its Cluster.
type Config struct {
	// NodeID is this controller's raft id (a redirect must not point a
	// worker back at us).
	NodeID uint64
	// SessionTimeout is how long a worker may stay silent before it is
	// fenced.
	SessionTimeout time.Duration
	// RequestTimeout bounds each catch-up read a new leader makes before
	// it takes over the sessions.
	RequestTimeout time.Duration
	// Logger is the controller's logger; the manager adds its component.
	Logger *slog.Logger
	// Registerer receives the session metrics; nil registers none.
	Registerer prometheus.Registerer
	// Listener accepts worker streams; nil: this controller accepts no
	// workers (tests drive the manager directly).
	Listener transport.StreamListener
	// Stopped is the error ProposePayload returns once the controller is
	// shutting down: an expected failure, not logged.
	Stopped error
}

// Manager is the leader's in-memory view of worker liveness, in the
// style of nomad's heartbeat.go: heartbeats update a map under a short
// mutex on the stream goroutines and are never written to the log; only
// transitions (registered, fenced, left) are proposed. Nothing here waits
// for apply, so a slow apply path delays fencing, never liveness.
//
// A controller that becomes leader first makes sure it has applied every
// committed entry (a linearizable read), then tracks every alive worker as
// if it had just heard from it: it cannot know what the previous leader
// received, so each worker gets a full session timeout from that moment.
type Manager struct {
	c       Cluster
	cfg     Config
	log     *slog.Logger
	met     *sessionMetrics
	timeout time.Duration
	ln      transport.StreamListener // nil: no worker listener

	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	closed      bool
	leading     bool
	ready       bool      // leading and the session table is loaded
	gen         uint64    // bumped on every leadership change
	ctrlEpoch   uint64    // the term this controller leads in
	since       time.Time // when the table was loaded
	sessions    map[string]*session
	registering map[string]bool
	fencing     bool // a fence proposal is in flight
	// streams are the open worker streams, which a new leader beckons
	// (beckon.go).
	streams map[*streamWriter]struct{}

	jobs sessionJobs // assignments, reports and log reads (jobs.go)

	impersonations transport.LogThrottle // logged impersonations, by certificate worker id
}

// session is one worker's liveness at the leader.
type session struct {
	id          string
	incarnation string
	epoch       uint64
	lastSeen    time.Time // last heartbeat, or when this leader took over
	heard       bool      // this leader has heard from the worker
	interval    time.Duration
	load        transport.WorkerLoad
	loadKnown   bool // a heartbeat brought load
	fencing     bool // included in an in-flight fence proposal
	stream      transport.Stream
	out         *streamWriter // writes to stream; shared with the pusher
	sentVersion uint64        // assignment version last sent on out
	// skippedEmpty: the version recorded in sentVersion was an empty set
	// that was not sent (the worker had nothing from this stream).
	skippedEmpty bool
}

// New starts the session manager: its fence checker, assignment pusher
// and report committer, and, with a listener, the accept loop. It stays
// idle until LeadershipChanged says this controller leads.
func New(c Cluster, cfg Config) *Manager {
	m := &Manager{
		c: c, cfg: cfg, log: cfg.Logger.With("component", "sessions"), timeout: cfg.SessionTimeout,
		ln: cfg.Listener, sessions: map[string]*session{}, registering: map[string]bool{},
		streams: map[*streamWriter]struct{}{},
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.met = newSessionMetrics(cfg.Registerer)
	m.jobs.init()
	m.wg.Go(m.checkLoop)
	m.wg.Go(m.pushLoop)
	m.wg.Go(m.reportLoop)
	if m.ln != nil {
		m.wg.Go(m.acceptLoop)
	}
	return m
}

// Close stops every loop and stream and waits for them. Call it once no
// leadership change can arrive any more.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	if m.ln != nil {
		_ = m.ln.Close()
	}
	m.wg.Wait()
}

// stopped reports whether err is the controller shutting down.
func (m *Manager) stopped(err error) bool {
	return m.cfg.Stopped != nil && errors.Is(err, m.cfg.Stopped)
}

// LeadershipChanged tells the manager this controller gained (isLeader)
// or lost leadership in term. It is a leader hook: it runs on the raft
// loop and must not block.
func (m *Manager) LeadershipChanged(isLeader bool, term uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.leading, m.ready, m.ctrlEpoch = isLeader, false, term
	m.sessions = map[string]*session{}
	m.registering = map[string]bool{}
	m.fencing = false
	if isLeader && !m.closed {
		gen := m.gen
		m.wg.Go(func() { m.takeOver(gen, term) })
	}
	m.log.Info("worker sessions: leadership changed", "leader", isLeader, "controller_epoch", term)
}

// current reports whether gen is still the live leadership.
func (m *Manager) current(gen uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen == gen && m.leading && !m.closed
}

// takeOver loads the registered workers once this leader has applied every
// committed entry, giving each a full session timeout from now.
func (m *Manager) takeOver(gen, term uint64) {
	for m.current(gen) {
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.RequestTimeout)
		err := m.c.LinearizableRead(ctx)
		cancel()
		if err == nil {
			break
		}
		m.log.Debug("worker sessions: waiting to catch up before taking over", "err", err)
	}
	workers := m.c.State().Workers()
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen != gen || !m.leading || m.closed {
		return
	}
	for _, w := range workers {
		if w.State != metadata.WorkerAlive && w.State != metadata.WorkerDraining {
			continue
		}
		m.sessions[w.ID] = &session{id: w.ID, incarnation: w.Incarnation, epoch: w.Epoch, lastSeen: now}
	}
	m.ready, m.since = true, now
	m.log.Info("worker sessions: took over as leader", "controller_epoch", term, "tracked_workers", len(m.sessions),
		"fence_silent_after", m.timeout)
	outs := m.streamsLocked()
	m.wg.Go(func() { m.beckon(gen, term, outs) })
}

// CheckEvery is how often the leader looks for expired sessions: a
// twentieth of the timeout, at most 100 ms, so a fence is proposed no later
// than timeout + 100 ms after the last heartbeat. A scan of 10,000 sessions
// takes well under a millisecond.
func (m *Manager) CheckEvery() time.Duration {
	return min(max(m.timeout/20, 10*time.Millisecond), 100*time.Millisecond)
}

func (m *Manager) checkLoop() {
	t := time.NewTicker(m.CheckEvery())
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.check(time.Now())
		}
	}
}

// check proposes one fence for every session silent for longer than the
// timeout. Only one fence proposal is in flight at a time; a slow commit
// just makes the next one bigger.
func (m *Manager) check(now time.Time) {
	m.mu.Lock()
	if !m.ready || m.fencing || m.closed {
		m.mu.Unlock()
		return
	}
	var refs []metadata.WorkerEpochRef
	for _, s := range m.sessions {
		if !s.fencing && now.Sub(s.lastSeen) > m.timeout {
			s.fencing = true
			refs = append(refs, metadata.WorkerEpochRef{ID: s.id, Epoch: s.epoch})
		}
	}
	if len(refs) == 0 {
		m.mu.Unlock()
		return
	}
	m.fencing = true
	gen, epoch := m.gen, m.ctrlEpoch
	m.mu.Unlock()
	m.wg.Go(func() { m.fence(gen, epoch, refs, now) })
}

func (m *Manager) fence(gen, epoch uint64, refs []metadata.WorkerEpochRef, now time.Time) {
	_, err := m.c.ProposePayload(m.ctx, metadata.OpWorkerFence, metadata.WorkerTransition{
		Workers: refs, Reason: "session_timeout", ControllerEpoch: epoch, AtMS: now.UnixMilli()})
	st := m.c.State()
	var streams []transport.Stream
	m.mu.Lock()
	m.fencing = false
	if m.gen != gen {
		m.mu.Unlock()
		return
	}
	fenced := 0
	for _, ref := range refs {
		s := m.sessions[ref.ID]
		if s == nil || s.epoch != ref.Epoch {
			continue // re-registered meanwhile: the fence was a no-op
		}
		if err != nil {
			s.fencing = false // try again at the next check
			continue
		}
		delete(m.sessions, ref.ID)
		if s.stream != nil {
			streams = append(streams, s.stream)
		}
		if w, ok := st.Worker(ref.ID); ok && w.Epoch == ref.Epoch && w.State == metadata.WorkerFenced {
			fenced++
			m.log.Info("fenced worker", "worker", ref.ID, "epoch", ref.Epoch, "silent_for", now.Sub(s.lastSeen).Round(time.Millisecond),
				"heard_by_this_leader", s.heard, "controller_epoch", epoch)
		}
	}
	m.mu.Unlock()
	if err != nil {
		if !m.stopped(err) && m.ctx.Err() == nil {
			m.log.Warn("could not commit worker fence; will retry", "workers", len(refs), "err", err)
		}
		return
	}
	m.met.fencings.WithLabelValues("session_timeout").Add(float64(fenced))
	for _, s := range streams {
		_ = s.Close()
	}
}

// redirect answers a worker that reached a controller that is not (or not
// yet) the leader.
func (m *Manager) redirect(seq uint64) transport.ControllerMessage {
	lead := m.c.LeaderID()
	if lead == m.cfg.NodeID {
		// Raft made us leader but the hook has not run yet.
		return &transport.Refused{ControllerEpoch: m.c.Term(), Seq: seq, Code: transport.RefuseNotReady,
			Message: "this controller is becoming the leader"}
	}
	var addr string
	if lead != 0 {
		addr, _ = m.c.MemberAddress(lead)
	}
	m.met.redirects.Inc()
	return &transport.Redirect{ControllerEpoch: m.c.Term(), Seq: seq, LeaderID: lead, LeaderAddr: addr}
}

// heartbeat handles one heartbeat on the worker's stream goroutine.
func (m *Manager) heartbeat(stream transport.Stream, out *streamWriter, hb *transport.Heartbeat) transport.ControllerMessage {
	now := time.Now()
	m.mu.Lock()
	if !m.leading {
		m.mu.Unlock()
		return m.redirect(hb.Seq)
	}
	epoch := m.ctrlEpoch
	if !m.ready {
		m.mu.Unlock()
		return &transport.Refused{ControllerEpoch: epoch, Seq: hb.Seq, Code: transport.RefuseNotReady,
			Message: "the new leader is still loading worker sessions"}
	}
	s := m.sessions[hb.WorkerID]
	if s == nil || s.epoch != hb.Epoch || s.incarnation != hb.Incarnation || s.fencing {
		var cur uint64
		if s != nil {
			cur = s.epoch
		}
		m.mu.Unlock()
		m.met.staleRefused.Inc()
		m.log.Info("refusing heartbeat from a fenced worker epoch", "worker", hb.WorkerID, "epoch", hb.Epoch,
			"current_epoch", cur, "remote", stream.RemoteAddr())
		return &transport.Refused{ControllerEpoch: epoch, Seq: hb.Seq, Code: transport.RefuseStaleEpoch,
			Message: fmt.Sprintf("epoch %d of worker %s is not live (fenced or superseded); register again", hb.Epoch, hb.WorkerID)}
	}
	s.lastSeen, s.heard, s.load, s.loadKnown, s.stream = now, true, hb.Load, true, stream
	pushDue := false
	if s.out != out {
		s.out, s.sentVersion, s.skippedEmpty, pushDue = out, 0, false, true
	}
	if hb.AssignVersion < s.sentVersion && !s.skippedEmpty {
		s.sentVersion, pushDue = hb.AssignVersion, true // the worker missed one: send again
	}
	if pushDue {
		m.pushSoonLocked(hb.WorkerID)
	}
	if hb.HeartbeatIntervalMS > 0 {
		s.interval = time.Duration(hb.HeartbeatIntervalMS) * time.Millisecond
	}
	gen := m.gen
	m.mu.Unlock()
	if pushDue {
		// The pusher reads the replicated state; this path never takes the
		// state's lock, so a long apply cannot delay a heartbeat.
		m.AssignmentsChanged()
	}
	m.met.heartbeats.Inc()
	if hb.Leaving {
		return m.leave(gen, epoch, hb)
	}
	return &transport.HeartbeatAck{ControllerEpoch: epoch, Seq: hb.Seq, Epoch: hb.Epoch,
		SessionTimeoutMS: uint64(m.timeout.Milliseconds())}
}

// leave commits that a worker shut down cleanly, so it is marked left at
// once instead of being fenced after the timeout.
func (m *Manager) leave(gen, epoch uint64, hb *transport.Heartbeat) transport.ControllerMessage {
	_, err := m.c.ProposePayload(m.ctx, metadata.OpWorkerLeave, metadata.WorkerTransition{
		Workers: []metadata.WorkerEpochRef{{ID: hb.WorkerID, Epoch: hb.Epoch}}, Reason: "shutdown",
		ControllerEpoch: epoch, AtMS: time.Now().UnixMilli()})
	if err != nil {
		return &transport.Refused{ControllerEpoch: epoch, Seq: hb.Seq, Code: transport.RefuseNotReady,
			Message: fmt.Sprintf("could not commit the leave: %v", err)}
	}
	m.mu.Lock()
	if s := m.sessions[hb.WorkerID]; s != nil && s.epoch == hb.Epoch && m.gen == gen {
		delete(m.sessions, hb.WorkerID)
	}
	m.mu.Unlock()
	m.met.leaves.Inc()
	m.log.Info("worker left", "worker", hb.WorkerID, "epoch", hb.Epoch)
	return &transport.HeartbeatAck{ControllerEpoch: epoch, Seq: hb.Seq, Epoch: hb.Epoch, Left: true,
		SessionTimeoutMS: uint64(m.timeout.Milliseconds())}
}

// register commits a new epoch for a worker. A different process (another
// incarnation) is refused while the id's session is live.
func (m *Manager) register(stream transport.Stream, out *streamWriter, r *transport.Register) transport.ControllerMessage {
	now := time.Now()
	// Read before m.mu: the state's lock is never taken under it.
	cur, known := m.c.State().Worker(r.WorkerID)
	m.mu.Lock()
	if !m.leading {
		m.mu.Unlock()
		return m.redirect(r.Seq)
	}
	gen, epoch := m.gen, m.ctrlEpoch
	refuse := func(code transport.RefuseCode, reason, format string, a ...any) transport.ControllerMessage {
		m.met.registrationsRefused.WithLabelValues(reason).Inc()
		return &transport.Refused{ControllerEpoch: epoch, Seq: r.Seq, Code: code, Message: fmt.Sprintf(format, a...)}
	}
	if msg := validateRegistration(r); msg != "" {
		m.mu.Unlock()
		return refuse(transport.RefuseInvalid, "invalid", "%s", msg)
	}
	if !m.ready {
		m.mu.Unlock()
		return refuse(transport.RefuseNotReady, "not_ready", "the new leader is still loading worker sessions")
	}
	if m.registering[r.WorkerID] {
		m.mu.Unlock()
		return refuse(transport.RefuseNotReady, "busy", "a registration of worker %s is in progress", r.WorkerID)
	}
	if s := m.sessions[r.WorkerID]; s != nil && (s.fencing || now.Sub(s.lastSeen) > m.timeout) {
		// Let the fence of the old epoch commit first (the checker does it
		// within CheckEvery), so the log reads fenced(old), registered(new).
		m.mu.Unlock()
		return refuse(transport.RefuseNotReady, "busy", "the previous epoch of worker %s is being fenced", r.WorkerID)
	} else if s != nil && s.incarnation != r.Incarnation {
		m.mu.Unlock()
		m.log.Warn("refusing a second process for a live worker id", "worker", r.WorkerID,
			"live_incarnation", s.incarnation, "new_incarnation", r.Incarnation, "remote", stream.RemoteAddr())
		return refuse(transport.RefuseDuplicate, "duplicate",
			"worker id %s is held by a live session (incarnation %s, epoch %d, last heard %s ago); stop the other process or wait %s for it to be fenced",
			r.WorkerID, s.incarnation, s.epoch, now.Sub(s.lastSeen).Round(time.Millisecond), m.timeout)
	} else if known && cur.Incarnation == r.Incarnation && r.HeldEpoch < cur.Epoch && (s == nil || s.epoch == cur.Epoch) &&
		(cur.State == metadata.WorkerAlive || cur.State == metadata.WorkerDraining) {
		// The same process again, at an epoch it never held: an earlier
		// Register of it committed, but it never heard so (the commit
		// outlived the request timeout and it was told "commit_failed", or
		// the answer came after it had asked again). It gets that epoch,
		// as a new leader carries every session over. A second
		// registration would start a new epoch and lose everything the
		// first was given, for a worker nobody fenced. (A worker that held
		// the epoch and gave it up — it fenced itself — gets a new one
		// below: what it ran under the old one is gone.)
		return m.admitLocked(stream, out, r, cur.Epoch, epoch, "worker registered again in its live session")
	}
	m.registering[r.WorkerID] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		if m.gen == gen {
			delete(m.registering, r.WorkerID)
		}
		m.mu.Unlock()
	}()

	prev, _ := m.c.State().Worker(r.WorkerID)
	reg := metadata.WorkerRegistration{
		ID: r.WorkerID, Epoch: prev.Epoch + 1, Incarnation: r.Incarnation, Addresses: r.Addresses, Labels: r.Labels,
		Capacity: metadata.Capacity{CPUMillis: int64(r.CPUMillis), MemoryMB: int64(r.MemoryMB)}, Version: r.Version,
		ControllerEpoch: epoch, AtMS: now.UnixMilli(),
	}
	_, err := m.c.ProposePayload(m.ctx, metadata.OpWorkerRegister, reg)
	if err != nil {
		return refuse(transport.RefuseNotReady, "commit_failed", "could not commit the registration: %v", err)
	}
	m.mu.Lock()
	if m.gen != gen {
		m.mu.Unlock()
		return refuse(transport.RefuseNotReady, "leader_changed", "leadership changed during the registration")
	}
	return m.admitLocked(stream, out, r, reg.Epoch, epoch, "worker registered")
}

// admitLocked starts the session of r's worker at workerEpoch on stream and
// answers Registered. The caller holds m.mu; admitLocked releases it.
func (m *Manager) admitLocked(stream transport.Stream, out *streamWriter, r *transport.Register,
	workerEpoch, ctrlEpoch uint64, logMsg string) transport.ControllerMessage {
	s := &session{id: r.WorkerID, incarnation: r.Incarnation, epoch: workerEpoch, lastSeen: time.Now(), heard: true,
		stream: stream, out: out}
	if r.HeartbeatIntervalMS > 0 {
		s.interval = time.Duration(r.HeartbeatIntervalMS) * time.Millisecond
	}
	m.sessions[r.WorkerID] = s
	m.mu.Unlock()
	m.met.registrations.Inc()
	m.log.Info(logMsg, "worker", r.WorkerID, "epoch", workerEpoch, "incarnation", r.Incarnation,
		"controller_epoch", ctrlEpoch, "remote", stream.RemoteAddr())
	return &transport.Registered{ControllerEpoch: ctrlEpoch, Seq: r.Seq, LeaderID: m.cfg.NodeID, Epoch: workerEpoch,
		SessionTimeoutMS: uint64(m.timeout.Milliseconds())}
}

// LiveView is the leader's liveness for one worker, for the API and the
// scheduler.
type LiveView struct {
	// Epoch is the worker epoch the session belongs to; the caller
	// matches it against the replicated worker before trusting the rest.
	Epoch uint64
	// Age is the time since the last heartbeat (or since this leader
	// took over, when it has not heard from the worker yet).
	Age time.Duration
	// Heard is whether this leader has heard from the worker itself.
	Heard bool
	// Suspect is whether the worker missed two heartbeats but is not
	// fenced yet.
	Suspect bool
	// Load is the worker's last reported load, nil until one arrived.
	Load *transport.WorkerLoad
	// Interval is the worker's heartbeat interval, 0 if unknown.
	Interval time.Duration
}

// Views returns the liveness of every tracked session; ok is false when
// this controller is not a ready leader.
func (m *Manager) Views(now time.Time) (map[string]LiveView, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready {
		return nil, false
	}
	out := make(map[string]LiveView, len(m.sessions))
	for id, s := range m.sessions {
		v := LiveView{Epoch: s.epoch, Age: now.Sub(s.lastSeen), Heard: s.heard, Interval: s.interval,
			Suspect: m.suspect(s, now)}
		if s.loadKnown {
			l := s.load
			v.Load = &l
		}
		out[id] = v
	}
	return out, true
}

// ControllerEpoch returns the term of this controller's latest leadership
// change: while it leads, the controller epoch its messages to workers
// carry.
func (m *Manager) ControllerEpoch() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctrlEpoch
}

// Since returns when this controller, as leader, loaded its session
// table: every worker's session timeout counts from then at the earliest.
// It is the zero time while not a ready leader.
func (m *Manager) Since() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready {
		return time.Time{}
	}
	return m.since
}

// suspect: an alive worker that missed two heartbeats (by its own
// interval, or a fifth of the session timeout if unknown) but is not fenced
// yet. The caller holds m.mu.
func (m *Manager) suspect(s *session, now time.Time) bool {
	late := 2 * s.interval
	if late <= 0 || late >= m.timeout {
		late = m.timeout / 5 * 2
	}
	return now.Sub(s.lastSeen) > late
}
