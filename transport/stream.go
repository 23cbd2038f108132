package transport

import (
	"context"
	"errors"
	"io"
	"time"
)

// ALPNWorker is the TLS application protocol of worker sessions. Workers
// dial the controllers' cluster listener with it (QUIC.ListenStreams).
const ALPNWorker = "corral-worker/1"

// Stream is an ordered, reliable, bidirectional byte stream to one peer:
// one QUIC stream on its own connection, or an in-memory pipe that obeys
// MemNetwork partitions. Close tears the whole session down (both
// directions); it may be called from any goroutine, also while another one
// is blocked in Read or Write.
type Stream interface {
	io.ReadWriteCloser
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	// RemoteAddr describes the peer for logs.
	RemoteAddr() string
	// Peer is who the peer's certificate says it is. ok is false only for
	// in-memory streams (tests), except on the listener's side of a stream
	// dialled with MemNetwork.StreamDialerAs.
	Peer() (id Identity, ok bool)
}

// StreamDialer opens streams to listeners by address. Implementations are
// safe for concurrent use.
type StreamDialer interface {
	// DialStream connects to addr and returns a stream on which the caller
	// speaks first. It honours ctx's deadline.
	DialStream(ctx context.Context, addr string) (Stream, error)
	// Close releases the dialer's resources; streams it opened are closed.
	Close() error
}

// StreamListener accepts streams.
type StreamListener interface {
	// Accept waits for the next stream. It returns ErrListenerClosed once
	// the listener is closed.
	Accept(ctx context.Context) (Stream, error)
	// Close stops accepting and closes every stream it accepted.
	Close() error
	// Addr is the address dialers reach this listener on.
	Addr() string
}

// ErrListenerClosed is returned by Accept after Close.
var ErrListenerClosed = errors.New("stream listener closed")

// ErrUnreachable is returned by in-memory dials that a partition blocks.
var ErrUnreachable = errors.New("peer unreachable")
