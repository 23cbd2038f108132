package zk

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// handshakeTimeout bounds the wait for a connection's first frame.
const handshakeTimeout = 10 * time.Second

// catchUpWait bounds how long a reconnect waits for this controller to
// apply what the client already saw elsewhere.
const catchUpWait = 2 * time.Second

// wordLinger and wordDrainMax bound how long, and how much of, what a
// client sends after its four-letter word is read before the close.
const (
	wordLinger   = time.Second
	wordDrainMax = 4 << 10
)

// drainAfterWord ends the answer to a four-letter word with a FIN, then
// reads what the client still sends until it closes. `echo ruok | nc`
// sends "ruok\n": closed with the newline unread, the kernel resets the
// connection instead, and a client that had not read the answer yet
// loses it (half of such nc runs did; ZooKeeper answers every one).
func (c *conn) drainAfterWord() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite() // a failure here only means the client left
	}
	c.nc.SetReadDeadline(time.Now().Add(wordLinger))
	_, _ = io.CopyN(io.Discard, c.nc, wordDrainMax)
}

// handshake reads the first frame: a four-letter word (answered, then
// the connection ends) or a ConnectRequest, which opens or resumes a
// session. ok reports a session is bound and requests may follow. The
// replies here are written directly: the writer starts after.
func (c *conn) handshake(fr *jute.FrameReader) (ok bool, err error) {
	c.nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	prefix, err := fr.ReadPrefix()
	if err != nil {
		return false, err
	}
	if word, isWord := jute.FourLetterWord(prefix); isWord {
		c.srv.met.requests.WithLabelValues("4lw_" + word).Inc()
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := c.nc.Write([]byte(c.srv.fourLetter(word))); err != nil {
			return false, err
		}
		c.drainAfterWord()
		return false, nil
	}
	body, err := fr.ReadBody(prefix)
	if err != nil {
		c.srv.met.refused.WithLabelValues("malformed").Inc()
		return false, fmt.Errorf("connect request: %w", err)
	}
	var req jute.ConnectRequest
	if err := jute.Decode(body, &req); err != nil {
		c.srv.met.refused.WithLabelValues("malformed").Inc()
		return false, fmt.Errorf("connect request: %w", err)
	}
	c.srv.met.received.Add(1)
	// As ZooKeeper: a client must not go back in time. If it saw a zxid
	// this controller has not applied yet, wait a little, else refuse;
	// the client tries another server.
	if req.LastZxidSeen > int64(c.srv.b.AppliedIndex()) {
		ctx, cancel := c.srv.timeoutCtx(catchUpWait)
		err := c.srv.b.WaitApplied(ctx, uint64(req.LastZxidSeen))
		cancel()
		if err != nil {
			c.srv.met.refused.WithLabelValues("behind_client").Inc()
			return false, fmt.Errorf("refusing session request: client saw zxid %#x, this controller applied %#x", req.LastZxidSeen, c.srv.b.AppliedIndex())
		}
	}
	resp := jute.ConnectResponse{ProtocolVersion: jute.ProtocolVersion, HasReadOnly: req.HasReadOnly}
	if req.SessionID == 0 {
		err = c.newSession(&req, &resp)
	} else {
		err = c.resumeSession(&req, &resp)
	}
	if err != nil {
		return false, err
	}
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.nc.Write(jute.AppendFrame(nil, &resp)); err != nil {
		return false, fmt.Errorf("connect response: %w", err)
	}
	c.srv.met.sent.Add(1)
	if resp.SessionID == 0 {
		return false, nil // told the client its session expired
	}
	c.sid.Store(resp.SessionID)
	c.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	c.srv.bindSession(c, resp.SessionID)
	c.srv.keep.touch(resp.SessionID)
	return true, nil
}

// negotiate clamps a requested timeout (ms) into the configured bounds.
func (s *Server) negotiate(ms int32) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	return min(max(d, s.cfg.MinSessionTimeout), s.cfg.MaxSessionTimeout)
}

func (c *conn) newSession(req *jute.ConnectRequest, resp *jute.ConnectResponse) error {
	timeout := c.srv.negotiate(req.TimeOut)
	pw := make([]byte, jute.PasswordLen)
	if _, err := rand.Read(pw); err != nil {
		return fmt.Errorf("session password: %w", err)
	}
	ctx, cancel := c.srv.timeoutCtx(c.srv.cfg.ProposeTimeout)
	defer cancel()
	res, err := c.srv.proposePayload(ctx, metadata.OpLeaseGrant, metadata.LeaseGrantPayload{
		TTLMS: timeout.Milliseconds(), SecretHash: passwordHash(pw)})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		c.srv.met.refused.WithLabelValues("session_grant").Inc()
		return fmt.Errorf("grant session: %w", err)
	}
	g, ok := res.Out.(metadata.LeaseGrant)
	if !ok {
		return fmt.Errorf("grant session: unexpected result %T", res.Out)
	}
	resp.TimeOut = int32(timeout.Milliseconds())
	resp.SessionID = g.ID
	resp.Passwd = pw
	c.srv.log.Info("zk: session opened", "remote", c.remote, "session", hexID(g.ID), "timeout", timeout)
	return nil
}

// resumeSession resumes a session opened here or on another controller.
// A missing session or a wrong password gets ZooKeeper's answer for an
// expired session: timeout 0, session id 0.
//
// A resume commits a bind of the session to this connection
// (metadata.OpZNodeBindSession) before it answers. A client that lost
// its connection with a write in flight does not know whether it was
// applied, and recovers by reading: kazoo's and Curator's locks look for
// their own sequential node after a ConnectionLoss on create. The bind
// settles that write's fate: if it reached the log before the bind, this
// controller has applied it by the time the bind is applied here, so the
// client's read sees it; if after, the state machine refuses it
// (SessionMoved), as ZooKeeper's leader refuses a write from the server a
// session left. That holds across a leader change too (a kazoo lock stuck
// after a leader kill in CI on 2026-12-06 showed the gap, docs/
// ZOOKEEPER.md "Guarantees"). Without a committed bind within 2 s the
// reconnect is refused and the client tries another server, its session
// intact.
func (c *conn) resumeSession(req *jute.ConnectRequest, resp *jute.ConnectResponse) error {
	l, ok := c.srv.b.State().Lease(req.SessionID)
	if !ok {
		// Opened a moment ago through another controller, perhaps: look
		// again once caught up, before calling it expired.
		ctx, cancel := c.srv.timeoutCtx(catchUpWait)
		err := c.srv.b.LinearizableRead(ctx)
		cancel()
		if err != nil {
			c.srv.met.refused.WithLabelValues("resume_not_caught_up").Inc()
			return fmt.Errorf("resume session %s: not caught up with a leader: %w", hexID(req.SessionID), err)
		}
		l, ok = c.srv.b.State().Lease(req.SessionID)
	}
	// A lease's secret hash never changes, so a mismatch here is final and
	// costs the log nothing.
	if !ok || !passwordMatches(l.SecretHash, req.Passwd) {
		c.sessionGone(req, resp, ok)
		return nil
	}
	ctx, cancel := c.srv.timeoutCtx(catchUpWait)
	bound, err := c.bindSession(ctx, metadata.ZNodeBind{Session: l.ID, Conn: c.owner, SecretHash: l.SecretHash})
	cancel()
	if err != nil {
		c.srv.met.refused.WithLabelValues("resume_not_caught_up").Inc()
		return fmt.Errorf("resume session %s: bind not committed: %w", hexID(req.SessionID), err)
	}
	if !bound { // expired meanwhile
		c.sessionGone(req, resp, false)
		return nil
	}
	resp.TimeOut = int32(l.TTLMS)
	resp.SessionID = l.ID
	resp.Passwd = req.Passwd
	c.srv.log.Info("zk: session resumed", "remote", c.remote, "session", hexID(l.ID))
	return nil
}

// sessionGone answers a resume of an expired, unknown or wrongly
// authenticated session as ZooKeeper does: timeout 0, session id 0.
func (c *conn) sessionGone(req *jute.ConnectRequest, resp *jute.ConnectResponse, known bool) {
	resp.Passwd = make([]byte, jute.PasswordLen)
	c.srv.log.Info("zk: session expired or unknown", "remote", c.remote, "session", hexID(req.SessionID), "known", known)
}

func passwordMatches(hash string, pw []byte) bool {
	want, _ := hex.DecodeString(hash)
	got := sha256.Sum256(pw)
	return len(want) == len(got) && subtle.ConstantTimeCompare(want, got[:]) == 1
}

func passwordHash(pw []byte) string {
	h := sha256.Sum256(pw)
	return hex.EncodeToString(h[:])
}

func hexID(id int64) string { return fmt.Sprintf("%#x", uint64(id)) }

var (
	errUnknownOutcome = errors.New("write outcome unknown")
	errSessionMoved   = errors.New("session moved to another connection")
)
