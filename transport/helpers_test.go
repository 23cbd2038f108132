package transport

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

const waitFor = 20 * time.Second

// recHandler records everything a transport hands to its Handler.
type recHandler struct {
	mu          sync.Mutex
	msgs        []*raftpb.Message
	unreachable map[uint64]int
	snaps       []snapReport
	failProcess bool
}

func newRecHandler() *recHandler { return &recHandler{unreachable: map[uint64]int{}} }

func (h *recHandler) Process(_ context.Context, m *raftpb.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, m)
	if h.failProcess {
		return errors.New("refused by test handler")
	}
	return nil
}

func (h *recHandler) ReportUnreachable(id uint64) {
	h.mu.Lock()
	h.unreachable[id]++
	h.mu.Unlock()
}

func (h *recHandler) ReportSnapshot(id uint64, s raft.SnapshotStatus) {
	h.mu.Lock()
	h.snaps = append(h.snaps, snapReport{id, s})
	h.mu.Unlock()
}

// countFrom counts received messages sent by from.
func (h *recHandler) countFrom(from uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m.GetFrom() == from {
			n++
		}
	}
	return n
}

func (h *recHandler) received() []*raftpb.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*raftpb.Message(nil), h.msgs...)
}

func (h *recHandler) unreachableCount(id uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unreachable[id]
}

func (h *recHandler) snapReports(id uint64, s raft.SnapshotStatus) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.snaps {
		if r.id == id && r.status == s {
			n++
		}
	}
	return n
}

func msg(typ raftpb.MessageType, from, to, index uint64) *raftpb.Message {
	return &raftpb.Message{Type: typ.Enum(), From: new(from), To: new(to), Term: new(uint64(1)), Index: new(index)}
}

func snapMsg(from, to uint64, data []byte) *raftpb.Message {
	m := msg(raftpb.MsgSnap, from, to, 10)
	m.Snapshot = &raftpb.Snapshot{
		Data:     data,
		Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(10)), Term: new(uint64(1)), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}},
	}
	return m
}

// clusterBundles issues n node certificates sharing one CA (exercising
// CreateCerts' CA reuse) and returns the loaded bundles.
func clusterBundles(t *testing.T, n int) []*TLSBundle {
	t.Helper()
	first := t.TempDir()
	require.NoError(t, CreateCerts(first, []string{"127.0.0.1", "localhost"}))
	out := make([]*TLSBundle, 0, n)
	for i := range n {
		dir := first
		if i > 0 {
			dir = t.TempDir()
			for _, f := range []string{CAFile, CAKeyFile} {
				b, err := os.ReadFile(filepath.Join(first, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
			}
			require.NoError(t, CreateCerts(dir, []string{"127.0.0.1"}))
		}
		b, err := LoadTLSDir(dir)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

type testNode struct {
	q   *QUIC
	h   *recHandler
	reg *prometheus.Registry
}

func startNode(t *testing.T, id uint64, b *TLSBundle, addr string, clusterID string) *testNode {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	reg := prometheus.NewRegistry()
	var q *QUIC
	// A restarted node rebinds its old port; retry briefly in case the
	// kernel has not released it yet.
	require.Eventually(t, func() bool {
		var err error
		q, err = NewQUIC(QUICConfig{
			NodeID: id, ListenAddr: addr, TLS: b, Registerer: reg,
			Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
			ClusterID: func() string { return clusterID },
		})
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	h := newRecHandler()
	require.NoError(t, q.Start(h))
	t.Cleanup(func() { _ = q.Close() })
	return &testNode{q: q, h: h, reg: reg}
}
