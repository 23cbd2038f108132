package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// Porcupine model of one key: puts, compare-and-sets, gets, deletes. The
// store revision is global, so the model only knows a key's mod revision
// after seeing it (rev -1: unknown, after a write whose outcome is unknown).
type kvState struct {
	exists bool
	value  string
	rev    int64
}

type kvInput struct {
	op    string // put, cas, get, del
	key   string
	value string
	prev  int64
}

type kvOutput struct {
	unknown bool // timed out: may or may not have happened
	ok      bool // cas: applied; get: found; del: deleted a key
	value   string
	rev     int64 // put/cas: revision of the write; get: mod revision
}

var kvModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(kvInput).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{kvState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		revOK := func(r int64) bool { return s.rev == -1 || r > s.rev }
		switch in.op {
		case "get":
			if out.ok != s.exists || (out.ok && out.value != s.value) || (out.ok && s.rev != -1 && out.rev != s.rev) {
				return nil
			}
			if out.ok {
				s.rev = out.rev
			}
			return []interface{}{s}
		case "put":
			if out.unknown {
				return []interface{}{s, kvState{exists: true, value: in.value, rev: -1}}
			}
			if !revOK(out.rev) {
				return nil
			}
			return []interface{}{kvState{exists: true, value: in.value, rev: out.rev}}
		case "cas":
			match := (in.prev == 0 && !s.exists) || (s.exists && (s.rev == in.prev || s.rev == -1))
			if out.unknown {
				if !match {
					return []interface{}{s}
				}
				return []interface{}{s, kvState{exists: true, value: in.value, rev: -1}}
			}
			if out.ok {
				if !match || !revOK(out.rev) {
					return nil
				}
				return []interface{}{kvState{exists: true, value: in.value, rev: out.rev}}
			}
			// A refused CAS: the revision must really differ.
			if s.rev != -1 && ((in.prev == 0 && !s.exists) || (s.exists && s.rev == in.prev)) {
				return nil
			}
			return []interface{}{s}
		case "del":
			if out.unknown {
				return []interface{}{s, kvState{}}
			}
			if out.ok != s.exists {
				return nil
			}
			return []interface{}{kvState{}}
		}
		return nil
	},
	Equal: func(a, b interface{}) bool { return a.(kvState) == b.(kvState) },
}

// Porcupine model of one lock taken with try-lock (wait=0) by leases that
// never expire during the test: holder 0 is free; tokens only grow.
type lockState struct {
	holder int64
	token  int64
}

type lockInput struct {
	op    string // acquire, release
	lease int64
}

type lockOutput struct {
	unknown bool
	ok      bool
	token   int64
}

var lockModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{lockState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(lockState), input.(lockInput), output.(lockOutput)
		switch in.op {
		case "acquire":
			if out.unknown {
				if s.holder == 0 {
					return []interface{}{s, lockState{holder: in.lease, token: -1}}
				}
				return []interface{}{s}
			}
			if !out.ok {
				if s.holder == 0 || s.holder == in.lease {
					return nil
				}
				return []interface{}{s}
			}
			switch {
			case s.holder == in.lease:
				if s.token != -1 && out.token != s.token {
					return nil
				}
			case s.holder == 0:
				if s.token != -1 && out.token <= s.token {
					return nil
				}
			default:
				return nil
			}
			return []interface{}{lockState{holder: in.lease, token: out.token}}
		case "release":
			if s.holder == in.lease {
				if out.unknown {
					return []interface{}{s, lockState{token: s.token}}
				}
				return []interface{}{lockState{token: s.token}}
			}
			return []interface{}{s}
		}
		return nil
	},
	Equal: func(a, b interface{}) bool { return a.(lockState) == b.(lockState) },
}

// checkHistory checks ops against model. When they are not linearizable
// it saves porcupine's visualization (the longest linearizable prefixes and
// where each gets stuck) and the raw operations as artifacts, so that a
// failure in CI can be read afterwards: a rare one cannot be rerun at will.
func checkHistory(t *testing.T, name string, model porcupine.Model, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(model, ops, 60*time.Second)
	if res == porcupine.Ok {
		return res
	}
	dir := filepath.Join("artifacts", strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("save %s history: %v", name, err)
		return res
	}
	html := filepath.Join(dir, name+"-history.html")
	if err := porcupine.VisualizePath(model, info, html); err != nil {
		t.Logf("visualize %s history: %v", name, err)
	}
	var raw strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&raw, "client=%d call=%d return=%d input=%+v output=%+v\n", op.ClientId, op.Call, op.Return, op.Input, op.Output)
	}
	_ = os.WriteFile(filepath.Join(dir, name+"-history.txt"), []byte(raw.String()), 0o644)
	t.Logf("%s history (%d operations): %s and %s-history.txt", name, len(ops), html, name)
	return res
}

// definite reports whether a failed call certainly had no effect.
func definite(err error) bool {
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status < 500 {
		return true
	}
	if errors.Is(err, client.ErrNoLeader) || errors.Is(err, client.ErrNotReady) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

type recorder struct {
	start time.Time
	mu    sync.Mutex
	kv    []porcupine.Operation
	lock  []porcupine.Operation
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) add(lock bool, op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lock {
		r.lock = append(r.lock, op)
	} else {
		r.kv = append(r.kv, op)
	}
}

// kvClient runs random operations on a few keys and records them.
func kvClient(ctx context.Context, id int, cl *client.Client, r *recorder, wg *sync.WaitGroup) {
	defer wg.Done()
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	lastRev := map[string]int64{}
	for seq := 0; ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("lin/k%d", rng.IntN(3))
		in := kvInput{key: key, value: fmt.Sprintf("c%d-%d", id, seq)}
		var out kvOutput
		var err error
		call := r.now()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		switch p := rng.IntN(10); {
		case p < 3:
			in.op = "put"
			out.rev, err = cl.Put(cctx, key, []byte(in.value))
		case p < 5:
			in.op, in.prev = "cas", lastRev[key]
			out.rev, err = cl.CompareAndPut(cctx, key, []byte(in.value), in.prev)
			out.ok = err == nil
			if errors.Is(err, client.ErrCompareFailed) {
				err = nil
			}
		case p < 9:
			in.op = "get"
			var kv *client.KV
			kv, err = cl.Get(cctx, key)
			if err == nil {
				out.ok, out.value, out.rev = true, string(kv.Value), kv.ModRevision
				lastRev[key] = kv.ModRevision
			} else if errors.Is(err, client.ErrNotFound) {
				err = nil
				lastRev[key] = 0
			}
		default:
			in.op = "del"
			var n int64
			_, n, err = cl.Delete(cctx, key)
			out.ok = n == 1
		}
		cancel()
		ret := r.now()
		switch {
		case err == nil:
		case ctx.Err() != nil && in.op == "get":
			continue
		case definite(err) || in.op == "get":
			continue // no effect: not part of the history
		default:
			out, ret = kvOutput{unknown: true}, math.MaxInt64
		}
		r.add(false, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
	}
}

// lockClient try-locks and releases one lock with its own long-lived lease.
func lockClient(ctx context.Context, id int, cl *client.Client, r *recorder, wg *sync.WaitGroup, t *testing.T) {
	defer wg.Done()
	s, err := cl.NewSession(ctx, 60*time.Second)
	if err != nil {
		t.Errorf("lock client %d: %v", id, err)
		return
	}
	l := s.NewLock("lin")
	for ctx.Err() == nil {
		for _, op := range []string{"acquire", "release"} {
			in := lockInput{op: op, lease: s.LeaseID()}
			var out lockOutput
			call := r.now()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			if op == "acquire" {
				out.token, err = l.TryLock(cctx)
				out.ok = err == nil
				if errors.Is(err, client.ErrLockBusy) {
					err = nil
				}
			} else {
				err = l.Unlock(cctx)
			}
			cancel()
			ret := r.now()
			switch {
			case err == nil:
			case definite(err):
				continue
			default:
				out, ret = lockOutput{unknown: true}, math.MaxInt64
			}
			r.add(true, porcupine.Operation{ClientId: 100 + id, Input: in, Call: call, Output: out, Return: ret})
		}
	}
}

// holding is one lock tenure as its holder saw it.
type holding struct {
	token      int64
	from, till time.Time
}

// blockingLocker takes a contended lock with blocking Lock calls; a tenure
// ends when Unlock is called or the session is in doubt, whichever first.
func blockingLocker(ctx context.Context, cl *client.Client, mu *sync.Mutex, out *[]holding, wg *sync.WaitGroup) {
	defer wg.Done()
	for ctx.Err() == nil {
		s, err := cl.NewSession(ctx, 4*time.Second)
		if err != nil {
			continue
		}
		l := s.NewLock("fenced")
		for ctx.Err() == nil {
			if s.Err() != nil {
				break
			}
			tok, err := l.Lock(ctx)
			if err != nil {
				break
			}
			h := holding{token: tok, from: time.Now()}
			select {
			case <-time.After(time.Duration(rand.IntN(40)) * time.Millisecond): // hold it for a while
			case <-s.Done():
			}
			h.till = time.Now()
			mu.Lock()
			*out = append(*out, h)
			mu.Unlock()
			if s.Err() != nil {
				break
			}
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_ = l.Unlock(cctx)
			cancel()
		}
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = s.Close(cctx)
		cancel()
	}
}

func TestLinearizability_KVAndLocksUnderLeaderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection test")
	}
	c := newCluster(t, 3)
	c.startAll()
	c.waitLeader(30 * time.Second)
	cl := c.client()
	bg := context.Background()
	_, err := cl.Put(bg, "lin/seed", []byte("x"))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	r := &recorder{start: time.Now()}
	var wg sync.WaitGroup

	// Watchers of everything, started at revision 1.
	type seen struct {
		mu   sync.Mutex
		revs []int64
	}
	watchers := make([]*seen, 3)
	wctx, wcancel := context.WithCancel(bg)
	defer wcancel()
	var wwg sync.WaitGroup
	for i := range watchers {
		watchers[i] = &seen{}
		w := c.client().Watch(wctx, "", 1)
		wwg.Add(1)
		go func(s *seen) {
			defer wwg.Done()
			for ev := range w.Events() {
				s.mu.Lock()
				s.revs = append(s.revs, ev.ModRevision)
				s.mu.Unlock()
			}
		}(watchers[i])
	}

	for i := range 4 {
		wg.Add(1)
		go kvClient(ctx, i, c.client(), r, &wg)
	}
	for i := range 3 {
		wg.Add(1)
		go lockClient(ctx, i, c.client(), r, &wg, t)
	}
	var hmu sync.Mutex
	var tenures []holding
	for range 3 {
		wg.Add(1)
		go blockingLocker(ctx, c.client(), &hmu, &tenures, &wg)
	}

	// Nemesis: alternately kill -9 and pause the leader.
	faults := 0
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-ctx.Done():
		case <-time.After(3 * time.Second): // spacing between faults
		}
		if ctx.Err() != nil {
			break
		}
		// A majority is enough to pick the next victim: a deposed leader
		// still catching up must not stall the nemesis (see the stop note).
		lead := c.waitMajorityLeader(20 * time.Second)
		n := c.nodes[lead]
		if i%2 == 0 {
			c.kill(lead)
			t.Logf("fault %d: kill -9 leader %d", i, lead)
			time.Sleep(time.Second) // downtime of the killed leader
			c.start(lead)
		} else {
			require.NoError(t, n.cmd.Process.Signal(syscall.SIGSTOP))
			t.Logf("fault %d: SIGSTOP leader %d", i, lead)
			time.Sleep(2 * time.Second) // pause length
			require.NoError(t, n.cmd.Process.Signal(syscall.SIGCONT))
		}
		faults++
	}
	wg.Wait()
	require.GreaterOrEqual(t, faults, 4)
	// Every node, paused or killed ones included, follows one leader again.
	c.waitLeader(30 * time.Second)

	// Linearizability of the KV and try-lock histories.
	t.Logf("checking %d kv and %d lock operations", len(r.kv), len(r.lock))
	res := checkHistory(t, "kv", kvModel.ToModel(), r.kv)
	require.Equal(t, porcupine.Ok, res, "KV history is not linearizable (or the check timed out)")
	res = checkHistory(t, "lock", lockModel.ToModel(), r.lock)
	require.Equal(t, porcupine.Ok, res, "lock history is not linearizable (or the check timed out)")

	// Lock checker: in fencing order, every tenure ended before the next began.
	// A Lock after an Unlock whose outcome was unknown may find the lock
	// still held by the same lease: same grant, same token, one tenure.
	sort.Slice(tenures, func(i, j int) bool { return tenures[i].token < tenures[j].token })
	require.NotEmpty(t, tenures)
	merged := tenures[:1]
	for _, h := range tenures[1:] {
		if last := &merged[len(merged)-1]; last.token == h.token {
			if h.from.Before(last.from) {
				last.from = h.from
			}
			if h.till.After(last.till) {
				last.till = h.till
			}
			continue
		}
		merged = append(merged, h)
	}
	tenures = merged
	for i := 1; i < len(tenures); i++ {
		a, b := tenures[i-1], tenures[i]
		require.Less(t, a.token, b.token, "a fencing token was granted twice")
		require.True(t, !b.from.Before(a.till), "tenure %d (token %d) began before tenure %d (token %d) ended", i, b.token, i-1, a.token)
	}
	t.Logf("lock checker: %d tenures, tokens %d..%d", len(tenures), tenures[0].token, tenures[len(tenures)-1].token)

	// Watch checker: every watcher saw every revision once, in order.
	_, rev, err := cl.List(bg, "nothing/")
	require.NoError(t, err)
	for i, s := range watchers {
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.revs) >= int(rev)
		}, 30*time.Second, 20*time.Millisecond, "watcher %d never caught up to revision %d", i, rev)
	}
	wcancel()
	wwg.Wait()
	t.Logf("watch checker: %d watchers each saw revisions 1..%d exactly once, in order", len(watchers), rev)
	for i, s := range watchers {
		require.GreaterOrEqual(t, len(s.revs), int(rev), "watcher %d saw %d events, want %d", i, len(s.revs), rev)
		for j, r := range s.revs {
			require.Equal(t, int64(j+1), r, "watcher %d: event %d has revision %d (gap, duplicate or reorder)", i, j, r)
		}
	}
}

// The models must reject what they exist to catch, or the check above
// proves nothing.
func TestLinearizability_ModelsRejectViolations(t *testing.T) {
	op := func(c int, in, out any, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret}
	}
	stale := []porcupine.Operation{
		op(0, kvInput{op: "put", key: "k", value: "a"}, kvOutput{rev: 5}, 0, 10),
		op(1, kvInput{op: "get", key: "k"}, kvOutput{ok: false}, 20, 30), // the write finished before: stale read
	}
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel.ToModel(), stale, 10*time.Second))
	lostCAS := []porcupine.Operation{
		op(0, kvInput{op: "put", key: "k", value: "a"}, kvOutput{rev: 5}, 0, 10),
		op(1, kvInput{op: "cas", key: "k", value: "b", prev: 5}, kvOutput{ok: true, rev: 6}, 20, 30),
		op(2, kvInput{op: "cas", key: "k", value: "c", prev: 5}, kvOutput{ok: true, rev: 7}, 40, 50),
	}
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel.ToModel(), lostCAS, 10*time.Second))
	unknownOK := []porcupine.Operation{
		op(0, kvInput{op: "put", key: "k", value: "a"}, kvOutput{unknown: true}, 0, math.MaxInt64),
		op(1, kvInput{op: "get", key: "k"}, kvOutput{ok: true, value: "a", rev: 9}, 20, 30),
	}
	require.Equal(t, porcupine.Ok, porcupine.CheckOperationsTimeout(kvModel.ToModel(), unknownOK, 10*time.Second))
	twoHolders := []porcupine.Operation{
		op(0, lockInput{op: "acquire", lease: 1}, lockOutput{ok: true, token: 5}, 0, 10),
		op(1, lockInput{op: "acquire", lease: 2}, lockOutput{ok: true, token: 6}, 20, 30),
	}
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(lockModel.ToModel(), twoHolders, 10*time.Second))
	shrinkingToken := []porcupine.Operation{
		op(0, lockInput{op: "acquire", lease: 1}, lockOutput{ok: true, token: 5}, 0, 10),
		op(0, lockInput{op: "release", lease: 1}, lockOutput{}, 20, 30),
		op(1, lockInput{op: "acquire", lease: 2}, lockOutput{ok: true, token: 4}, 40, 50),
	}
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(lockModel.ToModel(), shrinkingToken, 10*time.Second))
}
