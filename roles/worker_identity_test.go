package roles

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/internal/testcluster"
	"github.com/corral-dev/corral/transport"
)

// rawPeerAs opens a worker stream to the leader as a node holding a
// certificate that names who.
func rawPeerAs(t *testing.T, wc *testcluster.Cluster, netID uint64, who transport.Identity) *rawPeer {
	lead := wc.Leader()
	s, err := wc.Net.StreamDialerAs(netID, who).DialStream(context.Background(), wc.Addr(lead.NodeID()))
	require.NoError(t, err)
	return newRawPeer(t, s)
}

// registerRaw registers id on p, waiting out a leader that is still loading.
func registerRaw(t *testing.T, p *rawPeer, id string, first bool) *transport.Registered {
	t.Helper()
	for seq := uint64(1); ; seq++ {
		p.send(&transport.Register{Seq: seq, WorkerID: id, Incarnation: "inc-" + id}, first)
		first = false
		switch m := p.recv().(type) {
		case *transport.Registered:
			return m
		case *transport.Refused:
			require.Equal(t, transport.RefuseNotReady, m.Code, m.Message)
		default:
			t.Fatalf("unexpected answer %#v", m)
		}
	}
}

func requireClosed(t *testing.T, p *rawPeer) {
	t.Helper()
	require.NoError(t, p.s.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, _, err := transport.ReadWorkerMessage(p.br, nil)
	require.ErrorIs(t, err, io.EOF, "the leader kept a stream that spoke for another worker than its certificate")
}

// A worker certificate binds the stream to its worker: registering,
// heartbeating or reporting as another worker closes the stream before the
// message touches any state, and is counted.
func TestWorker_CertificateBindsTheWorkerID(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	lead := wc.Leader()
	const cluster = "test"
	a := transport.Identity{Cluster: cluster, Role: transport.RoleWorker, ID: "w-a"}
	b := transport.Identity{Cluster: cluster, Role: transport.RoleWorker, ID: "w-b"}

	// w-a registers under its own certificate.
	pa := rawPeerAs(t, wc, 901, a)
	ra := registerRaw(t, pa, "w-a", true)
	require.Equal(t, uint64(1), ra.Epoch)

	// w-b's certificate cannot register, heartbeat or report as w-a.
	for i, m := range []transport.WorkerMessage{
		&transport.Register{Seq: 1, WorkerID: "w-a", Incarnation: "evil"},
		&transport.Heartbeat{Seq: 1, WorkerID: "w-a", Incarnation: "inc-w-a", Epoch: ra.Epoch},
		&transport.AllocReport{WorkerID: "w-a", Epoch: ra.Epoch},
	} {
		p := rawPeerAs(t, wc, uint64(910+i), b)
		p.send(m, true)
		requireClosed(t, p)
		require.Equal(t, float64(i+1), testcluster.Metric(t, lead.Registry(), "corral_workers_impersonations_refused_total"))
	}
	// w-a's session is untouched: its own heartbeat is acknowledged at epoch 1.
	pa.send(&transport.Heartbeat{Seq: 2, WorkerID: "w-a", Incarnation: "inc-w-a", Epoch: ra.Epoch}, false)
	_, ok := pa.recv().(*transport.HeartbeatAck)
	require.True(t, ok, "the impersonation attempts disturbed the real worker's session")

	// w-b is still itself.
	pb := rawPeerAs(t, wc, 920, b)
	require.Equal(t, uint64(1), registerRaw(t, pb, "w-b", true).Epoch)

	// A controller certificate (combined mode, benchmarks) may speak for
	// any worker.
	pc := rawPeerAs(t, wc, 921, transport.ControllerIdentity(cluster, 1))
	require.Equal(t, uint64(1), registerRaw(t, pc, "w-c", true).Epoch)
	require.Equal(t, 3.0, testcluster.Metric(t, lead.Registry(), "corral_workers_impersonations_refused_total"))
}
