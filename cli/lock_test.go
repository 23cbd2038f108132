package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// TestLockSaysWhatItWaitsFor: while the lock (or the election) is held by someone else, lock and elect say on
// stderr who holds it and how the wait ends.
func TestLockSaysWhatItWaitsFor(t *testing.T) {
	url := startTestController(t)
	cl, err := client.New(client.Config{Endpoints: []string{url}, Timeout: 5 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	s, err := cl.NewSession(ctx, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	tok, err := s.NewLock("nightly").Lock(ctx)
	require.NoError(t, err)
	epoch, err := s.NewElection("coord").Campaign(ctx, "other-host")
	require.NoError(t, err)
	ep := "--endpoints=" + url

	_, errOut, err := run(t, "lock", ep, "--wait=300ms", "nightly", "--", "true")
	require.ErrorContains(t, err, "not acquired within --wait 300ms")
	require.Contains(t, errOut, fmt.Sprintf("corral lock: waiting for lock nightly, held by lease %d, fencing token %d; giving up after --wait 300ms\n",
		s.LeaseID(), tok))

	_, errOut, err = run(t, "elect", ep, "--id=me", "--wait=300ms", "coord", "--", "true")
	require.ErrorContains(t, err, "not acquired within --wait 300ms")
	require.Contains(t, errOut, fmt.Sprintf("corral elect: waiting to lead coord: other-host leads it (epoch %d); giving up after --wait 300ms\n", epoch))

	// A free lock is taken without a word on stderr.
	_, errOut, err = run(t, "lock", ep, "free", "--", "true")
	require.NoError(t, err)
	require.Empty(t, errOut)
}
