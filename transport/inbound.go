package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"go.etcd.io/raft/v3/raftpb"
)

// snapshotReadTimeout bounds how long a snapshot stream may take to arrive.
const snapshotReadTimeout = 10 * time.Minute

// acceptLoop accepts connections (the TLS handshake, including the client
// certificate check, is already done) and routes them by ALPN.
func (q *QUIC) acceptLoop() {
	for {
		conn, err := q.ln.Accept(q.ctx)
		if err != nil {
			q.mu.RLock()
			closed := q.closed
			q.mu.RUnlock()
			if !closed && q.ctx.Err() == nil && !errors.Is(err, quic.ErrServerClosed) {
				q.log.Error("accept failed; no longer accepting peers", "err", err)
			}
			return
		}
		cs := conn.ConnectionState().TLS
		proto := cs.NegotiatedProtocol
		if proto != ALPNJoin && len(cs.PeerCertificates) == 0 {
			// Only the join protocol goes without a verified client
			// certificate (joinConfig); nothing else may see such a
			// connection.
			_ = conn.CloseWithError(errCodeUnsupportedALPN, "client certificate required")
			continue
		}
		var fn func(*quic.Conn)
		if proto == ALPNRaft {
			fn = q.serveRaftConn
		} else {
			q.mu.RLock()
			fn = q.alpn[proto]
			q.mu.RUnlock()
		}
		if fn == nil {
			_ = conn.CloseWithError(errCodeUnsupportedALPN, "unsupported application protocol")
			continue
		}
		if !q.track(conn) {
			_ = conn.CloseWithError(errCodeShutdown, "node shutting down")
			return
		}
		q.wg.Go(func() {
			defer q.untrack(conn)
			fn(conn)
		})
	}
}

func (q *QUIC) track(c *quic.Conn) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.conns[c] = struct{}{}
	return true
}

func (q *QUIC) untrack(c *quic.Conn) {
	q.mu.Lock()
	delete(q.conns, c)
	q.mu.Unlock()
}

// serveRaftConn reads every stream a peer opens on one connection: long-lived
// unidirectional message streams and one bidirectional stream per snapshot.
//
// The handshake let only controller certificates of this cluster in; every
// stream must speak as the node id its certificate names.
func (q *QUIC) serveRaftConn(conn *quic.Conn) {
	peer, err := PeerIdentity(conn.ConnectionState().TLS)
	node := peer.NodeID()
	if err != nil || node == 0 {
		q.onReject(fmt.Errorf("%w: raft connection from %s without a controller identity", ErrRoleNotAllowed, conn.RemoteAddr()))
		_ = conn.CloseWithError(errCodeBadHeader, "not a controller")
		return
	}
	defer q.trackRaftPeer(node, conn.RemoteAddr().String())() // duplicate.go
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			s, err := conn.AcceptUniStream(q.ctx)
			if err != nil {
				return
			}
			wg.Go(func() { q.readMessages(conn, node, s) })
		}
	})
	for {
		s, err := conn.AcceptStream(q.ctx)
		if err != nil {
			break
		}
		wg.Go(func() { q.readSnapshot(conn, node, s) })
	}
	_ = conn.CloseWithError(errCodeShutdown, "")
	wg.Wait()
}

// inLink is the connection a stream arrived on, as reading its header
// and messages needs it: QUIC (quicLink) or TCP (tcpLink, raft_tcp.go).
type inLink interface {
	remote() string
	// gone reports whether the connection or the transport closed, so
	// that a failed read is not the peer's fault.
	gone() bool
	// refuse closes the whole connection with code and reason.
	refuse(code quic.ApplicationErrorCode, reason string)
}

type quicLink struct {
	q    *QUIC
	conn *quic.Conn
}

func (l quicLink) remote() string { return l.conn.RemoteAddr().String() }
func (l quicLink) gone() bool     { return l.conn.Context().Err() != nil || l.q.ctx.Err() != nil }
func (l quicLink) refuse(code quic.ApplicationErrorCode, reason string) {
	_ = l.conn.CloseWithError(code, reason)
}

// readStreamHeader reads and checks a stream header; on failure the whole
// connection is refused (a peer speaking garbage, for another node than its
// certificate names, or for another cluster is not a peer) and the
// rejection is counted.
func (q *QUIC) readStreamHeader(l inLink, certNode uint64, r io.Reader, kind byte) (streamHeader, bool) {
	hdr, err := readHeader(r)
	if err == nil && hdr.kind != kind {
		err = errors.New("unexpected stream kind")
	}
	if err != nil {
		if l.gone() {
			return hdr, false // connection went away; not the peer's fault
		}
		q.met.rejected.WithLabelValues(RejectBadHeader).Inc()
		q.log.Warn("refusing peer: bad stream header", "remote", l.remote(), "err", err)
		l.refuse(errCodeBadHeader, "bad stream header")
		return hdr, false
	}
	if hdr.from != certNode {
		q.onReject(fmt.Errorf("%w: stream from %s claims node %d, its certificate names node %d",
			ErrWrongPeerID, l.remote(), hdr.from, certNode))
		l.refuse(errCodeBadHeader, "stream header names another node than the certificate")
		return hdr, false
	}
	if local := q.clusterID(); local != "" && hdr.clusterID != "" && local != hdr.clusterID {
		q.met.rejected.WithLabelValues(RejectClusterID).Inc()
		q.log.Warn("refusing peer from another cluster", "peer", hdr.from, "remote", l.remote(),
			"their_cluster_id", hdr.clusterID, "our_cluster_id", local)
		l.refuse(errCodeClusterMismatch, "cluster id mismatch")
		return hdr, false
	}
	return hdr, true
}

// checkMessage drops messages not addressed to us or not from the node the
// stream header claims (e.g. an address now used by another node id).
func (q *QUIC) checkMessage(hdr streamHeader, m *raftpb.Message) bool {
	if m.GetTo() == q.cfg.NodeID && m.GetFrom() == hdr.from {
		return true
	}
	q.met.rejected.WithLabelValues(RejectWrongNode).Inc()
	q.log.Warn("dropping misaddressed raft message", "stream_from", hdr.from,
		"from", m.GetFrom(), "to", m.GetTo(), "type", m.GetType().String())
	return false
}

func (q *QUIC) readMessages(conn *quic.Conn, certNode uint64, s *quic.ReceiveStream) {
	_ = s.SetReadDeadline(time.Now().Add(headerTimeout))
	q.readMessageStream(quicLink{q, conn}, certNode, s, func() { _ = s.SetReadDeadline(time.Time{}) },
		func() { s.CancelRead(errCodeBadFrame) })
}

// readMessageStream reads a message stream's header from r, then its
// messages until the stream ends, handing each to raft. open is called
// once the header is accepted (to lift the header's read deadline), stop
// when the stream must end on the peer's fault.
func (q *QUIC) readMessageStream(l inLink, certNode uint64, r io.Reader, open, stop func()) {
	br := bufio.NewReaderSize(r, 64<<10)
	hdr, ok := q.readStreamHeader(l, certNode, br, streamKindMessages)
	if !ok {
		stop()
		return
	}
	// No read deadline from here on: raft heartbeats keep a leader's
	// stream busy, a follower's may stay quiet for as long as nothing
	// changes, and the connection's own liveness (QUIC's idle timeout,
	// TCP's keep-alives) detects a dead peer.
	open()
	var buf []byte
	for {
		frame, err := readFrame(br, maxMessageFrame, buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !l.gone() {
				q.log.Warn("closing message stream from peer", "peer", hdr.from, "err", err)
				stop()
			}
			return
		}
		if cap(frame) <= 1<<20 {
			buf = frame // reuse: proto.Unmarshal copies bytes fields
		}
		m, err := decodeMessage(frame)
		if err != nil {
			q.log.Warn("closing message stream from peer", "peer", hdr.from, "err", err)
			stop()
			return
		}
		if !q.checkMessage(hdr, m) {
			continue
		}
		q.deliver(hdr.from, m)
		if q.ctx.Err() != nil {
			return
		}
	}
}

func (q *QUIC) deliver(from uint64, m *raftpb.Message) error {
	q.met.received.WithLabelValues(m.GetType().String()).Inc()
	q.touchPeer(from)
	q.mu.RLock()
	h := q.handler
	q.mu.RUnlock()
	err := h.Process(q.ctx, m)
	if err != nil && q.ctx.Err() == nil {
		q.log.Debug("handler rejected raft message", "from", from, "type", m.GetType().String(), "err", err)
	}
	return err
}

// readSnapshot receives one MsgSnap and acknowledges it after Process.
func (q *QUIC) readSnapshot(conn *quic.Conn, certNode uint64, s *quic.Stream) {
	_ = s.SetReadDeadline(time.Now().Add(headerTimeout))
	br := bufio.NewReaderSize(s, 64<<10)
	hdr, ok := q.readStreamHeader(quicLink{q, conn}, certNode, br, streamKindSnapshot)
	if !ok {
		s.CancelRead(errCodeBadFrame)
		s.CancelWrite(errCodeBadFrame)
		return
	}
	_ = s.SetReadDeadline(time.Now().Add(snapshotReadTimeout))
	ack := ackFail
	defer func() {
		_ = s.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, _ = s.Write([]byte{ack})
		_ = s.Close()
	}()
	frame, err := readFrame(br, maxSnapshotFrame, nil)
	if err != nil {
		q.log.Warn("snapshot stream failed", "peer", hdr.from, "err", err)
		return
	}
	m, err := decodeMessage(frame)
	if err != nil || m.GetType() != raftpb.MsgSnap {
		q.log.Warn("bad snapshot message", "peer", hdr.from, "type", m.GetType().String(), "err", err)
		return
	}
	if !q.checkMessage(hdr, m) {
		return
	}
	if q.deliver(hdr.from, m) == nil {
		ack = ackOK
	}
}
