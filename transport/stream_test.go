package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServe answers every byte slice read on s with the same bytes.
// startWorkerEcho starts controller 1 with an echoing worker listener and
// returns both with the bundles of nodes 1 and 2 (2 is free to dial with).
func startWorkerEcho(t *testing.T) (*testNode, StreamListener, []*TLSBundle) {
	t.Helper()
	bundles := clusterBundles(t, 2)
	ctrl := startNode(t, 1, bundles[0], "", "")
	l, err := ctrl.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	echoServe(t, l)
	return ctrl, l, bundles
}

// echoNode makes node 1 of n echo streams at "mem-1" and returns node
// 100's dialer; both close when the test ends.
func echoNode(t *testing.T, n *MemNetwork) StreamDialer {
	l, err := n.ListenStreams(1, "mem-1")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	echoServe(t, l)
	d := n.StreamDialer(100)
	t.Cleanup(func() { d.Close() })
	return d
}

func echoServe(t *testing.T, l StreamListener) {
	t.Helper()
	go func() {
		for {
			s, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				_, _ = io.Copy(s, s)
				s.Close()
			}()
		}
	}()
}

// dialWorkerStream dials addr on the worker protocol with bundle's
// certificate; the stream and its dialer close when the test ends.
func dialWorkerStream(t *testing.T, bundle *TLSBundle, addr string) Stream {
	t.Helper()
	return dialWorkerStreamWith(t, QUICDialerConfig{TLS: bundle}, addr)
}

// dialWorkerStreamWith is dialWorkerStream with more of the dialer's
// configuration; it fills in the worker protocol and a loopback address.
func dialWorkerStreamWith(t *testing.T, cfg QUICDialerConfig, addr string) Stream {
	t.Helper()
	cfg.ALPN, cfg.LocalAddr = ALPNWorker, "127.0.0.1:0"
	d, err := NewQUICDialer(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	s, err := d.DialStream(ctx, addr)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func readWithin(t *testing.T, s Stream, n int, d time.Duration) ([]byte, error) {
	t.Helper()
	require.NoError(t, s.SetReadDeadline(time.Now().Add(d)))
	b := make([]byte, n)
	_, err := io.ReadFull(s, b)
	return b, err
}

func TestMemStream_PartitionHoldsBytesAndHealDeliversThem(t *testing.T) {
	n := NewMemNetwork(1)
	d := echoNode(t, n)

	s, err := d.DialStream(context.Background(), "mem-1")
	require.NoError(t, err)
	_, err = s.Write([]byte("ping"))
	require.NoError(t, err)
	got, err := readWithin(t, s, 4, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping", string(got))

	n.Isolate(100)
	_, err = s.Write([]byte("held"))
	require.NoError(t, err, "a write into a partition is buffered, as QUIC would retransmit it")
	_, err = readWithin(t, s, 4, 100*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "nothing crosses a partition")

	// A dial across the partition waits and fails at the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = d.DialStream(ctx, "mem-1")
	cancel()
	require.ErrorIs(t, err, ErrUnreachable)

	n.Heal()
	got, err = readWithin(t, s, 4, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "held", string(got))

	_, err = d.DialStream(context.Background(), "mem-404")
	require.ErrorContains(t, err, "connection refused")
}

func TestMemStream_LongPartitionKillsSessionAndCloseIsSeen(t *testing.T) {
	n := NewMemNetwork(1)
	n.SetStreamIdleTimeout(100 * time.Millisecond)
	l, err := n.ListenStreams(1, "mem-1")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	d := n.StreamDialer(100)
	t.Cleanup(func() { d.Close() })

	s, err := d.DialStream(context.Background(), "mem-1")
	require.NoError(t, err)
	srv, err := l.Accept(context.Background())
	require.NoError(t, err)
	n.Partition([]uint64{1}, []uint64{100})
	_, err = readWithin(t, s, 1, 5*time.Second)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.ErrorContains(t, err, "no network activity")
	n.Heal()

	// A close reaches the other side.
	s2, err := d.DialStream(context.Background(), "mem-1")
	require.NoError(t, err)
	srv2, err := l.Accept(context.Background())
	require.NoError(t, err)
	require.NoError(t, srv2.Close())
	_, err = readWithin(t, s2, 1, 5*time.Second)
	require.ErrorIs(t, err, io.EOF)
	_, err = srv2.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)

	// Closing the listener closes what it accepted.
	require.NoError(t, l.Close())
	_, err = srv.Write([]byte("x"))
	require.True(t, errors.Is(err, net.ErrClosed))
	_, err = l.Accept(context.Background())
	require.ErrorIs(t, err, ErrListenerClosed)
}

func TestQUICStreams_WorkerALPNSharesTheClusterListener(t *testing.T) {
	t.Parallel()
	ctrl, l, bundles := startWorkerEcho(t)

	s := dialWorkerStream(t, bundles[1], ctrl.q.Addr().String())
	frame, err := AppendWorkerFrame(WorkerPreamble(), &Redirect{ControllerEpoch: 3, LeaderAddr: "x"})
	require.NoError(t, err)
	_, err = s.Write(frame)
	require.NoError(t, err)
	got, err := readWithin(t, s, len(frame), waitFor)
	require.NoError(t, err)
	require.Equal(t, frame, got)
	require.NoError(t, s.Close())

	// A worker certificate from another CA is refused at the handshake. The
	// rogue trusts our CA and claims our cluster, so that it is the
	// controller that refuses it.
	otherCA := t.TempDir()
	require.NoError(t, CreateCA(otherCA, ""))
	rogue := issueBundle(t, otherCA, RoleWorker, "w-rogue")
	sneaky := &TLSBundle{CA: bundles[0].CA, Cert: rogue.Cert,
		Self: Identity{Cluster: bundles[0].Self.Cluster, Role: RoleWorker, ID: "w-rogue"}}
	rd, err := NewQUICDialer(QUICDialerConfig{TLS: sneaky, ALPN: ALPNWorker, LocalAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() { rd.Close() })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	rs, err := rd.DialStream(ctx2, ctrl.q.Addr().String())
	if err == nil {
		// TLS 1.3 clients finish before the server checks their
		// certificate: the refusal arrives as a closed connection.
		_, _ = rs.Write(frame)
		_, err = readWithin(t, rs, 1, 5*time.Second)
	}
	require.Error(t, err)
	require.Equal(t, 1.0, rejectedCount(t, ctrl.reg, RejectUntrustedCert), "the controller refused it")

	// Closing the listener ends accepted sessions.
	s3 := dialWorkerStream(t, bundles[1], ctrl.q.Addr().String())
	_, err = s3.Write(frame)
	require.NoError(t, err)
	_, err = readWithin(t, s3, len(frame), waitFor)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = readWithin(t, s3, 1, waitFor)
	require.Error(t, err)
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded)
}

// With backoff, a session that lost bytes to a partition stays stalled
// after the heal for as long as the loss lasted, as QUIC's doubling
// retransmission timer leaves it; one that wrote nothing meanwhile is
// not stalled, and neither is a new one.
func TestMemStream_BackoffStallsOnlyASessionThatLostBytes(t *testing.T) {
	n := NewMemNetwork(1)
	n.SetStreamBackoff(true)
	d := echoNode(t, n)
	quiet, err := d.DialStream(context.Background(), "mem-1")
	require.NoError(t, err)
	lossy, err := d.DialStream(context.Background(), "mem-1")
	require.NoError(t, err)

	n.Isolate(100)
	_, err = lossy.Write([]byte("lost"))
	require.NoError(t, err)
	const cut = 300 * time.Millisecond
	time.Sleep(cut) // the partition's length: the fault itself, not a wait for a condition
	n.Heal()
	healed := time.Now()

	ok, _ := quiet.(*memStream).sess.status()
	require.True(t, ok, "a session that lost nothing is stalled")
	fresh, err := d.DialStream(context.Background(), "mem-1")
	require.NoError(t, err)
	ok, _ = fresh.(*memStream).sess.status()
	require.True(t, ok, "a new session is stalled")
	ok, _ = lossy.(*memStream).sess.status()
	require.False(t, ok, "the session that lost bytes is not stalled after the heal")

	got, err := readWithin(t, lossy, 4, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "lost", string(got))
	require.GreaterOrEqual(t, time.Since(healed), cut, "the stall ended before the loss's length")
}
