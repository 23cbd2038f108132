package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The TCP message stream carries the kernel's answer rule: data
// unacknowledged for unansweredAfter ends the connection, as the answer
// watch ends a QUIC one.
func TestRaftTCPStreamHasTheUserTimeout(t *testing.T) {
	t.Parallel()
	a, b := startPair(t)
	a.q.mu.RLock()
	p := a.q.peers[2]
	a.q.mu.RUnlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tc, err := p.dialTCP(ctx, b.q.Addr().String())
	require.NoError(t, err)
	defer tc.Close()
	raw, err := tc.NetConn().(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	var ms int
	var serr error
	require.NoError(t, raw.Control(func(fd uintptr) {
		ms, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}))
	require.NoError(t, serr)
	require.Equal(t, int(unansweredAfter.Milliseconds()), ms)
}
