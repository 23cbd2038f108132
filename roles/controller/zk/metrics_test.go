package zk

import (
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := newFakeBackend()
	s := startServer(t, b, Config{Registerer: reg})
	c, _ := connect(t, s.Addr().String())
	_, err := c.Create("/m", nil, 0, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	_, err = c.Create("/m", nil, 0, gozk.WorldACL(gozk.PermAll))
	require.ErrorIs(t, err, gozk.ErrNodeExists)
	_, _, _, err = c.GetW("/m")
	require.NoError(t, err)

	require.Equal(t, 1.0, testutil.ToFloat64(s.met.connections))
	require.Equal(t, 1.0, testutil.ToFloat64(s.met.sessions))
	require.Equal(t, 1.0, testutil.ToFloat64(s.met.watches))
	require.Equal(t, 2.0, testutil.ToFloat64(s.met.requests.WithLabelValues("create")))
	require.Equal(t, 1.0, testutil.ToFloat64(s.met.errors.WithLabelValues("NodeExists")))
	n, err := testutil.GatherAndCount(reg, "corral_zk_requests_total", "corral_zk_connections")
	require.NoError(t, err)
	require.Greater(t, n, 1)

	// A second server on the same registry collides; Close unregisters.
	_, err = New(Config{Registerer: reg}, b)
	require.Error(t, err)
}

// TestSyncFailureCloses: sync without a leader ends the connection.
func TestSyncFailureCloses(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	b.failWith(errNoLeader)
	defer b.failWith(nil)
	r.write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpSync}, &jute.PathRequest{Path: "/"}))
	require.True(t, r.closed())
}

// TestReapLoopLeaderOnly: the reaper acts only while leading.
func TestReapLoopLeaderOnly(t *testing.T) {
	b := newFakeBackend()
	b.leader.Store(false)
	s := startServer(t, b, Config{ContainerCheckInterval: 5 * time.Millisecond})
	c, _ := connect(t, s.Addr().String())
	acl := gozk.WorldACL(gozk.PermAll)
	_, err := c.CreateTTL("/t", nil, gozk.FlagTTL, acl, time.Second)
	require.NoError(t, err)
	b.advance(time.Minute)
	n := b.AppliedIndex()
	// Several passes go by as a follower: nothing is proposed.
	ticks := s.reapTicks.Load()
	require.Eventually(t, func() bool { return s.reapTicks.Load() > ticks+3 }, 10*time.Second, time.Millisecond)
	require.Equal(t, n, b.AppliedIndex())
	b.leader.Store(true)
	require.Eventually(t, func() bool { _, ok := b.st.ZNode("/t"); return !ok }, 10*time.Second, time.Millisecond)
}
