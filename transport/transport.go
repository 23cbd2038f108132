// Package transport carries raft messages between controllers.
//
// Two implementations share the Transport interface: QUIC (mutual TLS 1.3
// over QUIC, one connection and one long-lived unidirectional stream per
// peer) for real clusters, and MemNetwork for in-process tests with
// partitions, loss and reordering.
//
// Both follow etcd's rule that the raft loop must never block on the
// network: Send only enqueues into a bounded per-peer queue and drops (with
// ReportUnreachable, plus ReportSnapshot(Failure) for MsgSnap) when the
// queue is full or the peer is down. Handler callbacks are always invoked
// from the transport's own goroutines, never from inside Send, so a Handler
// may safely hand them to the goroutine that calls Send.
package transport

import (
	"context"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// ALPNRaft is the TLS application protocol of controller-to-controller raft
// traffic. Other protocols can share the listener via QUIC.HandleALPN.
const ALPNRaft = "corral-raft/1"

// Handler receives inbound raft traffic; implemented by the controller.
type Handler interface {
	// Process delivers one inbound message (typically to raft.Node.Step).
	Process(ctx context.Context, m *raftpb.Message) error
	// ReportUnreachable tells raft that a message to id was probably lost.
	ReportUnreachable(id uint64)
	// ReportSnapshot reports the outcome of a MsgSnap sent to id.
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
}

// PeerStatus is the transport's view of one peer.
type PeerStatus struct {
	// Connected is true while an outbound connection to the peer is up.
	Connected bool
	// LastContact is the last time a message was sent to or received from
	// the peer; zero if never.
	LastContact time.Time
	// RTT is the smoothed round-trip time of the outbound connection (0 if
	// unknown).
	RTT time.Duration
	// MessagesOverTCP is true while raft messages go to the peer over
	// TCP, false while they go over QUIC (raft_tcp.go).
	MessagesOverTCP bool
}

// Transport moves raft messages between nodes.
type Transport interface {
	// Start begins accepting inbound traffic and delivering it to h.
	Start(h Handler) error
	// Send enqueues messages and never blocks: a bounded queue per peer;
	// when full, the message is dropped and h.ReportUnreachable is called
	// (plus ReportSnapshot(Failure) for MsgSnap). Messages to unknown peers
	// are dropped.
	Send(msgs []*raftpb.Message)
	// AddPeer registers (or updates the address of) a peer; idempotent.
	AddPeer(id uint64, addr string)
	// RemovePeer forgets a peer and stops sending to it.
	RemovePeer(id uint64)
	// PeerStatus reports the connection state of a peer (zero if unknown).
	PeerStatus(id uint64) PeerStatus
	// Close stops all goroutines and closes all connections.
	Close() error
}
