package bench

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// fillSocket sends into u, which nobody reads, until the kernel has
// dropped a datagram for want of buffer.
func fillSocket(t *testing.T, u *net.UDPConn) {
	t.Helper()
	require.NoError(t, u.SetReadBuffer(1024))
	tx, err := net.DialUDP("udp", nil, u.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer tx.Close()
	payload := make([]byte, 512)
	deadline := time.Now().Add(10 * time.Second)
	for sent := 0; ; sent++ {
		_, err := tx.Write(payload)
		require.NoError(t, err)
		s, err := transport.ReadUDPSocket(u)
		require.NoError(t, err)
		if s.Drops > 0 {
			return
		}
		require.True(t, sent < 10000 && time.Now().Before(deadline), "no drop after %d datagrams", sent)
	}
}

// sockDialer is a StreamDialer whose socket is u (only UDPSocket is used).
type sockDialer struct{ u *net.UDPConn }

func (d sockDialer) DialStream(context.Context, string) (transport.Stream, error) {
	return nil, os.ErrInvalid
}
func (d sockDialer) Close() error { return nil }
func (d sockDialer) UDPSocket() (transport.UDPSocket, error) {
	return transport.ReadUDPSocket(d.u)
}

// The bench tells apart drops on its own sockets from drops on a local
// controller's, and says when its own mean the run measured itself.
func TestReadSocketDrops_SimulatorAndControllers(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/net/udp"); err != nil {
		t.Skip("no /proc/net/udp on this system")
	}
	listen := func() *net.UDPConn {
		u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = u.Close() })
		return u
	}
	sim, ctrl, quiet := listen(), listen(), listen()
	ctrls := []string{ctrl.LocalAddr().String(), quiet.LocalAddr().String(), "controller.example:7001"}
	dialers := []transport.StreamDialer{sockDialer{sim}}

	before := readSocketDrops(dialers, ctrls)
	require.True(t, before.simOK)
	require.Zero(t, before.sim)
	require.Equal(t, map[string]uint64{ctrls[0]: 0, ctrls[1]: 0}, before.ctrl, "a host name is not looked up")

	fillSocket(t, ctrl)
	mid := readSocketDrops(dialers, ctrls)
	require.Positive(t, mid.ctrl[ctrls[0]])
	require.Zero(t, mid.ctrl[ctrls[1]])
	require.False(t, mid.simulatorStarved(before), "a controller's drops are not the simulator's")

	fillSocket(t, sim)
	after := readSocketDrops(dialers, ctrls)
	require.True(t, after.simulatorStarved(mid))
	require.False(t, after.simulatorStarved(after))
	line := after.report("while measuring", mid)
	require.Contains(t, line, "while measuring: simulated workers ")
	require.NotContains(t, line, "simulated workers 0")
	require.Contains(t, line, ctrls[1]+"=0")
	require.True(t, strings.Index(line, ctrls[0]) >= 0)
}
