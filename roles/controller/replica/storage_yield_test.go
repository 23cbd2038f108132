package replica

import (
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/raftlog"
)

// On one P the append loop lets the goroutines woken with it run before
// its write (yieldBeforeWrite). Each round does what the raft loop does
// with a Ready: it queues a log write, then wakes two stand-ins for the
// transport's writers. The scheduler runs the last goroutine woken first
// and the rest in order, so without the yield the write starts while the
// first writer still waits, and in production that writer waits for the
// whole sync. The scheduler takes from its global queue now and then
// (one time in 61) and, under the race detector, shuffles its order, so
// the test counts rounds: with the yield almost none start early, without
// it most do.
func TestAppendLoopLetsWokenWritersGoFirstOnOneP(t *testing.T) {
	store, err := raftlog.Open(raftlog.Options{Dir: t.TempDir(), NoSync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	var wrote [2]atomic.Bool
	var early atomic.Int32
	persisting := make(chan struct{}, 1)
	c := &Replica{store: store, appendQ: newFIFO[*pb.Message](), applyQ: newFIFO[applyItem](),
		halt: make(chan struct{}), cfg: Config{Hooks: Hooks{BeforePersist: func(uint64) {
			if !wrote[0].Load() || !wrote[1].Load() {
				early.Add(1)
			}
			persisting <- struct{}{}
		}}}}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	loopDone := make(chan error, 1)
	go func() { loopDone <- c.appendLoop() }()
	t.Cleanup(func() {
		close(c.halt)
		require.NoError(t, <-loopDone)
	})

	const rounds = 200
	for i := uint64(1); i <= rounds; i++ {
		wrote[0].Store(false)
		wrote[1].Store(false)
		var wake [2]chan struct{}
		for w := range wake {
			wake[w] = make(chan struct{})
			parked := make(chan struct{})
			go func() {
				close(parked)
				<-wake[w] // a transport writer waiting for messages
				wrote[w].Store(true)
			}()
			<-parked
			runtime.Gosched() // let it reach its receive
		}
		c.appendQ.push(appendMsg(ents(1, i, i), nil))
		close(wake[0])
		close(wake[1])
		select {
		case <-persisting:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the append loop never wrote", i)
		}
		// The next round starts with the loop waiting for work again, as
		// the raft loop finds it: the write done, the loop back at its
		// select (on one P, yielding runs it until it blocks there).
		for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
			if last, err := store.LastIndex(); err == nil && last == i {
				break
			}
			require.True(t, time.Now().Before(deadline), "round %d: the write never landed", i)
		}
		runtime.Gosched()
	}
	require.Less(t, int(early.Load()), rounds/4,
		"the append loop started its write before the writers woken with it ran in %d of %d rounds", early.Load(), rounds)
	t.Logf("the write started before a woken writer ran in %d of %d rounds", early.Load(), rounds)
}
