package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Worker ops (20-29). Their payload is a JSON document in Command.Value
// (unknown fields are refused, like the coordination ops'). Only state
// transitions are committed; heartbeats never reach the log.
const (
	// OpWorkerRegister records a registration: the worker gets the epoch
	// carried in the payload, which must be its previous epoch + 1.
	OpWorkerRegister Op = 20
	// OpWorkerFence marks workers fenced, each only at the epoch named.
	OpWorkerFence Op = 21
	// OpWorkerLeave marks a worker that shut down cleanly as left.
	OpWorkerLeave Op = 22
)

// WorkerState is the replicated state of a worker. "suspect" is not one:
// it is the leader's in-memory view of an alive worker that is late.
type WorkerState string

// Replicated worker states.
const (
	WorkerAlive    WorkerState = "alive"
	WorkerFenced   WorkerState = "fenced"
	WorkerDraining WorkerState = "draining" // alive, takes no new work; its services move elsewhere
	WorkerLeft     WorkerState = "left"
)

// Capacity is what a worker offers.
type Capacity struct {
	CPUMillis int64 `json:"cpu_millicores"`
	MemoryMB  int64 `json:"memory_mb"`
}

// Worker is one worker as the replicated state knows it.
type Worker struct {
	ID string `json:"id"`
	// Epoch grows by one with every committed registration of this id; a
	// worker's reports are accepted only for its current epoch.
	Epoch uint64 `json:"epoch"`
	// Incarnation is a random id the worker process chose at start.
	Incarnation string            `json:"incarnation"`
	State       WorkerState       `json:"state"`
	Addresses   []string          `json:"addresses,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Capacity    Capacity          `json:"capacity"`
	Version     string            `json:"version,omitempty"`
	// RegisteredAtMS and StateChangedAtMS are Unix milliseconds chosen by
	// the proposing leader (apply reads no clock).
	RegisteredAtMS   int64 `json:"registered_at_ms"`
	StateChangedAtMS int64 `json:"state_changed_at_ms"`
	// Reason says why the state last changed ("registered",
	// "session_timeout", "shutdown", ...).
	Reason string `json:"reason,omitempty"`
	// Drain survives re-registration: a drained worker that restarts comes
	// back draining.
	Drain bool `json:"drain,omitempty"`
	// AssignVersion grows whenever what this worker must run changes.
	AssignVersion uint64 `json:"assign_version,omitempty"`
}

// ErrWorkerNotFound names a missing worker.
var ErrWorkerNotFound = errors.New("worker not found")

func (w *Worker) clone() Worker {
	c := *w
	c.Addresses = append([]string(nil), w.Addresses...)
	if w.Labels != nil {
		c.Labels = make(map[string]string, len(w.Labels))
		for k, v := range w.Labels {
			c.Labels[k] = v
		}
	}
	return c
}

// WorkerRegistration is the payload of OpWorkerRegister.
type WorkerRegistration struct {
	ID          string            `json:"id"`
	Epoch       uint64            `json:"epoch"`
	Incarnation string            `json:"incarnation"`
	Addresses   []string          `json:"addresses,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Capacity    Capacity          `json:"capacity"`
	Version     string            `json:"version,omitempty"`
	// ControllerEpoch is the proposing leader's term: worker commands from
	// an older leader than one already seen are refused (a deposed leader's
	// late proposal must not undo its successor's decisions).
	ControllerEpoch uint64 `json:"controller_epoch"`
	AtMS            int64  `json:"at_ms"`
}

// WorkerEpochRef names one worker at one epoch.
type WorkerEpochRef struct {
	ID    string `json:"id"`
	Epoch uint64 `json:"epoch"`
}

// WorkerTransition is the payload of OpWorkerFence (any number of workers)
// and OpWorkerLeave (exactly one). A reference whose epoch is not the
// worker's current one, or whose worker is not alive or draining, is a
// no-op: a stale fence can never hit a newer registration.
type WorkerTransition struct {
	Workers         []WorkerEpochRef `json:"workers"`
	Reason          string           `json:"reason,omitempty"`
	ControllerEpoch uint64           `json:"controller_epoch"`
	AtMS            int64            `json:"at_ms"`
}

// NewWorkerCommand builds a worker command with a JSON payload.
func NewWorkerCommand(op Op, payload any) (*Command, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", op, err)
	}
	return &Command{Op: op, Value: b}, nil
}

// checkControllerEpoch refuses commands from a leader older than the newest
// one that already committed a worker command, and records e otherwise.
// The caller holds s.mu.
func (s *State) checkControllerEpoch(op Op, e uint64) (Result, bool) {
	if e < s.ext.WorkersControllerEpoch {
		return s.invalid("%s: stale controller epoch %d (already saw %d)", op, e, s.ext.WorkersControllerEpoch), false
	}
	s.ext.WorkersControllerEpoch = e
	return Result{}, true
}

func (s *State) applyWorkerRegister(c *Command) Result {
	var r WorkerRegistration
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	if r.ID == "" || r.Incarnation == "" || r.Epoch == 0 {
		return s.invalid("worker register: id, incarnation and epoch are required")
	}
	prev := s.ext.Workers[r.ID]
	var prevEpoch uint64
	if prev != nil {
		prevEpoch = prev.Epoch
	}
	if r.Epoch != prevEpoch+1 {
		return s.invalid("worker register %s: epoch %d is not the next epoch (current %d)", r.ID, r.Epoch, prevEpoch)
	}
	if res, ok := s.checkControllerEpoch(c.Op, r.ControllerEpoch); !ok {
		return res
	}
	if s.ext.Workers == nil {
		s.ext.Workers = map[string]*Worker{}
	}
	w := &Worker{
		ID: r.ID, Epoch: r.Epoch, Incarnation: r.Incarnation, State: WorkerAlive,
		Addresses: r.Addresses, Labels: r.Labels, Capacity: r.Capacity, Version: r.Version,
		RegisteredAtMS: r.AtMS, StateChangedAtMS: r.AtMS, Reason: "registered",
	}
	if prev != nil {
		w.Drain, w.AssignVersion = prev.Drain, prev.AssignVersion
		if w.Drain {
			w.State = WorkerDraining
		}
	}
	s.ext.Workers[r.ID] = w
	// What an older epoch ran is gone: a worker stops its work before it
	// registers again, and a restarted process kills its predecessor's.
	s.loseAllocs(r.ID, prevEpoch, r.AtMS, fmt.Sprintf("worker %s registered again (epoch %d)", r.ID, r.Epoch))
	s.bumpAssign(r.ID)
	s.wantEvalUnplaced()
	return Result{Revision: s.revision}
}

// applyWorkerTransition moves every referenced worker that is still at the
// referenced epoch (and alive or draining) to state to.
func (s *State) applyWorkerTransition(c *Command, to WorkerState) Result {
	var t WorkerTransition
	if err := decodePayload(c, &t); err != nil {
		return s.invalid("%v", err)
	}
	if len(t.Workers) == 0 || (c.Op.Base() == OpWorkerLeave && len(t.Workers) != 1) {
		return s.invalid("%s: wrong number of workers (%d)", c.Op, len(t.Workers))
	}
	if res, ok := s.checkControllerEpoch(c.Op, t.ControllerEpoch); !ok {
		return res
	}
	for _, ref := range t.Workers {
		w := s.ext.Workers[ref.ID]
		if w == nil || w.Epoch != ref.Epoch || (w.State != WorkerAlive && w.State != WorkerDraining) {
			continue
		}
		w.State, w.StateChangedAtMS, w.Reason = to, t.AtMS, t.Reason
		s.loseAllocs(ref.ID, ref.Epoch, t.AtMS, fmt.Sprintf("worker %s epoch %d %s (%s)", ref.ID, ref.Epoch, to, t.Reason))
	}
	return Result{Revision: s.revision}
}

// Workers returns copies of every known worker, ordered by id.
func (s *State) Workers() []Worker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Worker, 0, len(s.ext.Workers))
	for _, w := range s.ext.Workers {
		out = append(out, w.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Worker returns a copy of one worker.
func (s *State) Worker(id string) (Worker, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	w, ok := s.ext.Workers[id]
	if !ok {
		return Worker{}, false
	}
	return w.clone(), true
}
