package transport

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// A socket nobody reads loses datagrams once its buffer is full, and
// ReadUDPSocket finds its row and the kernel's count.
func TestReadUDPSocket_CountsTheKernelsDrops(t *testing.T) {
	t.Parallel()
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer rx.Close()
	require.NoError(t, rx.SetReadBuffer(1024)) // the kernel's minimum: a few datagrams
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer tx.Close()

	s, err := ReadUDPSocket(rx)
	require.NoError(t, err)
	require.Equal(t, rx.LocalAddr().(*net.UDPAddr).AddrPort(), s.Local)
	require.Zero(t, s.Drops)

	payload := make([]byte, 512)
	deadline := time.Now().Add(10 * time.Second)
	for sent := 0; ; sent++ {
		_, err := tx.Write(payload)
		require.NoError(t, err)
		s, err = ReadUDPSocket(rx)
		require.NoError(t, err)
		if s.Drops > 0 {
			break
		}
		require.True(t, sent < 10000 && time.Now().Before(deadline), "no drop counted after %d datagrams into a full buffer", sent)
	}
	require.NotZero(t, s.RxQueue, "the datagrams that fitted wait in the buffer")
}

// The controller's cluster socket is reported in its metrics.
func TestQUIC_ExportsItsSocketsDrops(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 1)
	n := startNode(t, 1, bs[0], "", "c1")
	s, err := n.q.UDPSocket()
	require.NoError(t, err)
	require.Equal(t, n.q.Addr().(*net.UDPAddr).AddrPort(), s.Local)
	require.Equal(t, float64(s.Drops), gathered(t, n.reg, "corral_transport_udp_receive_drops_total"))
	gathered(t, n.reg, "corral_transport_udp_receive_queue_bytes")
}

// gathered returns the value of an unlabelled metric, failing if absent.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not gathered", name)
	return 0
}
