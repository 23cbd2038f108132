package raftlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestConcurrentReadersAndWriter runs raft-like readers against a writer
// that appends, snapshots and compacts, with a tiny cache so that reads go to
// Pebble while commits are in flight. Readers must only ever see contiguous,
// intact entries or the ErrCompacted a racing compaction legitimately causes.
// Run it with -race.
func TestConcurrentReadersAndWriter(t *testing.T) {
	s := openTest(t, t.TempDir(), withCache(4000))
	payload := func(i uint64) []byte { return fmt.Appendf(nil, "entry-%d", i) }
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), 1))
			for !stop.Load() {
				first, err1 := s.FirstIndex()
				last, err2 := s.LastIndex()
				if err := errors.Join(err1, err2); err != nil {
					errs <- err
					return
				}
				if last < first {
					continue
				}
				lo := first + uint64(rnd.IntN(int(last-first+1)))
				got, err := s.Entries(lo, last+1, uint64(rnd.IntN(2000)))
				if errors.Is(err, raft.ErrCompacted) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				for k, e := range got {
					if e.GetIndex() != lo+uint64(k) || string(e.GetData()) != string(payload(e.GetIndex())) {
						errs <- fmt.Errorf("bad entry %v at position %d from %d", e, k, lo)
						return
					}
				}
				if _, err := s.Term(lo); err != nil && !errors.Is(err, raft.ErrCompacted) {
					errs <- err
					return
				}
			}
		}()
	}

	next := uint64(1)
	for round := range 120 {
		n := 1 + uint64(round%17)
		batch := make([]*pb.Entry, 0, n)
		for i := next; i < next+n; i++ {
			batch = append(batch, &pb.Entry{Index: new(i), Term: new(uint64(1)), Data: payload(i)})
		}
		require.NoError(t, s.Save(hardState(1, 1, next-1), batch, nil, false))
		next += n
		if round%10 == 9 {
			snapAt := next - 1 - 20
			_, err := s.CreateSnapshot(snapAt, nil, []byte("sm"))
			require.NoError(t, err)
			require.NoError(t, s.Compact(snapAt))
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestTailCacheBounded(t *testing.T) {
	c := newTailCache(1000)
	for i := uint64(1); i <= 200; i++ {
		c.append([]*pb.Entry{ent(i, 1, "0123456789")})
		require.LessOrEqual(t, c.bytes, uint64(1000))
		f, ok := c.first()
		require.True(t, ok)
		got, ok := c.get(i)
		require.True(t, ok)
		require.Equal(t, i, got.e.GetIndex())
		require.Greater(t, f, uint64(0))
	}
	c.append([]*pb.Entry{ent(150, 2, "x")}) // conflict below the cached range: restart
	f, _ := c.first()
	require.Equal(t, uint64(150), f)
	c.compactTo(150)
	_, ok := c.first()
	require.False(t, ok)
	require.Zero(t, c.bytes)
}
