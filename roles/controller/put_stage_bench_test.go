package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// Per-stage benchmarks of a put (issue 21, item 6): a whole proposal
// through real controllers (replica, raft loop, Pebble with fsync,
// apply), in one process over the in-memory network, so the stages that
// raftlog/, metadata/ and api/ measure alone add up here, and a put
// through a follower shows what forwarding costs. The network is the
// in-memory one (no QUIC, no TLS, no loopback): the real network round
// trip is not in these figures.

// stageCluster starts n controllers with fsync on, waits for a leader and
// returns the controllers by id and the leader's id.
func stageCluster(b *testing.B, n int) (map[uint64]*Controller, uint64) {
	b.Helper()
	net := transport.NewMemNetwork(1)
	peers := map[uint64]string{}
	for i := 1; i <= n; i++ {
		peers[uint64(i)] = fmt.Sprintf("mem:%d", i)
	}
	nodes := map[uint64]*Controller{}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		c, err := Start(Config{
			NodeID: id, DataDir: b.TempDir(), Peers: peers, NoSync: false,
			// Election timeout 0.5–1 s: 64 clients with fsync on 2 cores
			// must not starve heartbeats into an election mid-run.
			TickInterval: 20 * time.Millisecond, ElectionTicks: 25, RequestTimeout: 5 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: net.Transport(id),
		})
		if err != nil {
			b.Fatal(err)
		}
		nodes[id] = c
	}
	b.Cleanup(func() {
		for _, c := range nodes {
			_ = c.Close()
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lead := nodes[1].LeaderID()
		agreed := lead != 0
		for _, c := range nodes {
			agreed = agreed && c.LeaderID() == lead
		}
		if agreed {
			// The first put also waits for the leader's first entry of
			// its term to apply everywhere.
			if _, err := nodes[lead].Propose(context.Background(), &metadata.Command{Op: metadata.OpPut, Key: "warm", Value: []byte("x")}); err != nil {
				b.Fatal(err)
			}
			return nodes, lead
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("no leader")
	return nil, 0
}

// benchPuts runs sequential puts of 256-byte values through c: one
// client's latency, every put its own Ready and fsync.
func benchPuts(b *testing.B, c *Controller) {
	val := make([]byte, 256)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		_, err := c.Propose(ctx, &metadata.Command{Op: metadata.OpPut, Key: fmt.Sprintf("bench/key/%08d", i%1000), Value: val})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStageProposeOneNode is Controller.Propose on a single-node
// cluster: encoding, the wait registry, raft, one fsynced Pebble batch,
// apply and the wake-up of the waiter, end to end with no network.
func BenchmarkStageProposeOneNode(b *testing.B) {
	nodes, lead := stageCluster(b, 1)
	benchPuts(b, nodes[lead])
}

// BenchmarkStageProposeThreeNodes is the same put on a 3-node cluster
// over the in-memory network, proposed on the leader and on a follower
// (raft forwards the follower's proposal to the leader as MsgProp). The
// difference between the two is the forwarding stage; both include the
// leader's and a follower's fsync (in parallel) and the MsgApp round.
func BenchmarkStageProposeThreeNodes(b *testing.B) {
	for _, via := range []string{"leader", "follower"} {
		b.Run("via="+via, func(b *testing.B) {
			nodes, lead := stageCluster(b, 3)
			target := nodes[lead]
			if via == "follower" {
				target = nodes[lead%3+1]
			}
			benchPuts(b, target)
		})
	}
}

// BenchmarkStageProposeParallel is many clients proposing at once through
// one follower of a 3-node cluster: puts proposed between two Readys
// share one Pebble batch and one fsync, so the cost per put falls with
// the number of clients (compare with the sequential figure above).
func BenchmarkStageProposeParallel(b *testing.B) {
	nodes, lead := stageCluster(b, 3)
	target := nodes[lead%3+1]
	val := make([]byte, 256)
	b.ReportAllocs()
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, err := target.Propose(context.Background(), &metadata.Command{Op: metadata.OpPut, Key: fmt.Sprintf("bench/key/%08d", i%1000), Value: val}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
