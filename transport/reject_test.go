package transport

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRejectReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: corral://c2/controller/1, this node is in cluster \"c1\"", ErrForeignCluster), RejectForeignCluster},
		{fmt.Errorf("%w: corral://c1/worker/w1", ErrRoleNotAllowed), RejectWrongRole},
		{fmt.Errorf("%w: want controller 2, got corral://c1/controller/3", ErrWrongPeerID), RejectWrongNode},
		{fmt.Errorf("%w: %v", ErrNoPeerIdentity, ErrNoIdentity), RejectNoIdentity},
		{fmt.Errorf("%w: x509: unknown authority", ErrUntrustedCert), RejectUntrustedCert},
		{fmt.Errorf("handshake: %w", fmt.Errorf("%w: x", ErrWrongPeerID)), RejectWrongNode}, // wrapped twice
		{errIdentityMissing, RejectUntrustedCert},
		{errors.New("anything else"), RejectUntrustedCert},
	} {
		require.Equal(t, tc.want, rejectReason(tc.err), "%v", tc.err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes that
// counts the lines written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += bytes.Count(p, []byte("\n"))
	return s.b.Write(p)
}

func (s *syncBuffer) lines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testRejectLog returns a rejectLog writing to a buffer, with a clock the
// test sets.
func testRejectLog() (*rejectLog, *syncBuffer, *time.Time) {
	buf := &syncBuffer{}
	r := newRejectLog(slog.New(slog.NewTextHandler(buf, nil)))
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	r.now = func() time.Time { return now }
	return r, buf, &now
}

func TestRejectLogOncePerMinutePerPeerAndReason(t *testing.T) {
	t.Parallel()
	r, buf, now := testRejectLog()
	peerA := fmt.Errorf("%w: corral://c1/worker/a", ErrRoleNotAllowed)
	peerB := fmt.Errorf("%w: corral://c1/worker/b", ErrRoleNotAllowed)
	start := *now
	step := func(at time.Duration, reason string, err error, logged bool) {
		t.Helper()
		*now = start.Add(at)
		before := buf.lines()
		r.warn(reason, err)
		if logged {
			require.Equal(t, before+1, buf.lines(), "at %v: %s %v must be logged", at, reason, err)
		} else {
			require.Equal(t, before, buf.lines(), "at %v: %s %v must not be logged", at, reason, err)
		}
	}
	step(0, RejectWrongRole, peerA, true)
	step(time.Second, RejectWrongRole, peerA, false)
	step(time.Second, RejectWrongRole, peerB, true) // another peer
	step(time.Second, RejectWrongNode, peerA, true) // another reason
	step(2*time.Second, RejectWrongNode, peerA, false)
	step(59*time.Second, RejectWrongRole, peerA, false)
	step(59*time.Second+999*time.Millisecond, RejectWrongRole, peerA, false)
	step(time.Minute, RejectWrongRole, peerA, true) // a minute after its last line: again
	step(time.Minute+999*time.Millisecond, RejectWrongNode, peerA, false)
	step(time.Minute+time.Second, RejectWrongNode, peerA, true)
	step(time.Minute+time.Second, RejectWrongRole, peerB, true)
	step(time.Minute+2*time.Second, RejectWrongRole, peerA, false) // the minute restarts at each line
	step(2*time.Minute, RejectWrongRole, peerA, true)
	step(2*time.Minute+500*time.Millisecond, RejectWrongNode, peerA, false)

	out := buf.String()
	require.Contains(t, out, "refused peer")
	require.Contains(t, out, "reason="+RejectWrongRole)
	require.Contains(t, out, "corral://c1/worker/b")
}

func TestRejectLogIsBounded(t *testing.T) {
	t.Parallel()
	r, buf, now := testRejectLog()
	peer := func(i int) error { return fmt.Errorf("%w: corral://c1/controller/%d", ErrWrongPeerID, i+1) }
	// A peer presenting a new certificate every time: each is news, and the
	// table never holds more than maxRejectKeys entries.
	for i := range 3*maxRejectKeys + 5 {
		*now = now.Add(time.Millisecond)
		r.warn(RejectWrongNode, peer(i))
		require.LessOrEqual(t, r.throttle.Len(), maxRejectKeys)
		require.Equal(t, i+1, buf.lines())
	}
	// Past the bound the table was forgotten, so an early peer that is
	// still within its minute is logged again rather than remembered
	// forever.
	*now = now.Add(time.Millisecond)
	r.warn(RejectWrongNode, peer(0))
	require.Equal(t, 3*maxRejectKeys+6, buf.lines())
	// A remembered one is not.
	last := peer(3*maxRejectKeys + 4)
	r.warn(RejectWrongNode, last)
	require.Equal(t, 3*maxRejectKeys+6, buf.lines())
}

func TestRejectLogConcurrent(t *testing.T) {
	t.Parallel()
	r, buf, _ := testRejectLog()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				r.warn(RejectForeignCluster, fmt.Errorf("%w: corral://c%d/controller/%d", ErrForeignCluster, g%2, i%4+1))
			}
		})
	}
	wg.Wait()
	require.Equal(t, 8, buf.lines(), "one line per distinct peer and reason")
}
