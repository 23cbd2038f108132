package sessions

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

const (
	// workerPreambleTimeout bounds how long a new stream may take to say
	// what it is.
	workerPreambleTimeout = 10 * time.Second
	// workerWriteTimeout bounds one reply; a worker that does not read is
	// dropped rather than allowed to hold a goroutine.
	workerWriteTimeout = 5 * time.Second
)

func validateRegistration(r *transport.Register) string {
	if err := metadata.ValidateWorkerID(r.WorkerID); err != nil {
		return err.Error()
	}
	if r.Incarnation == "" {
		return "registration without an incarnation id"
	}
	for k, v := range r.Labels {
		if err := metadata.ValidateLabelKey(k); err != nil {
			return err.Error()
		}
		if len(v) > 255 {
			return fmt.Sprintf("label %q: value longer than 255 bytes", k)
		}
	}
	return ""
}

func (m *Manager) acceptLoop() {
	for {
		s, err := m.ln.Accept(m.ctx)
		if err != nil {
			if m.ctx.Err() == nil && !errors.Is(err, transport.ErrListenerClosed) {
				m.log.Error("worker listener failed; no longer accepting workers", "err", err)
			}
			return
		}
		m.wg.Go(func() { m.serveStream(s) })
	}
}

// serveStream answers one worker's messages in order, on this goroutine:
// a heartbeat touches nothing but the session map, so it is answered at
// once whatever apply, scheduling or the API are doing.
func (m *Manager) serveStream(s transport.Stream) {
	defer s.Close()
	// The listener closes accepted streams on shutdown too; this also
	// covers streams handed over by an injected listener.
	stop := context.AfterFunc(m.ctx, func() { _ = s.Close() })
	defer stop()
	_ = s.SetReadDeadline(time.Now().Add(workerPreambleTimeout))
	// Small on purpose: the leader holds one per worker for the session's
	// life, a heartbeat is far smaller, and a larger frame (a registration
	// with many labels) is read past the buffer.
	br := bufio.NewReaderSize(s, SessionReadBuffer)
	if err := transport.ReadWorkerPreamble(br); err != nil {
		m.met.badStreams.Inc()
		m.log.Warn("refusing worker stream", "remote", s.RemoteAddr(), "err", err)
		return
	}
	var (
		buf    []byte
		bound  string // the worker id this stream speaks for
		readDL time.Time
	)
	// A worker certificate names the one worker its holder may be; a
	// controller certificate (combined mode, benchmarks) may speak for any.
	certID := ""
	if peer, ok := s.Peer(); ok && peer.Role == transport.RoleWorker {
		certID = peer.ID
	}
	out := &streamWriter{s: s}
	m.addStream(out)
	defer m.forgetStream(out)
	for {
		// A live worker writes at least every heartbeat interval; a stream
		// silent for two session timeouts belongs to a worker that is gone.
		// Deadlines are pushed out only now and then: resetting the timers
		// on every message is a measurable share of a heartbeat's cost.
		if now := time.Now(); readDL.Sub(now) < m.timeout {
			readDL = now.Add(2 * m.timeout)
			_ = s.SetReadDeadline(readDL)
		}
		msg, b, err := transport.ReadWorkerMessage(br, buf)
		buf = b
		if err != nil {
			if m.ctx.Err() == nil && !isClosedErr(err) {
				m.log.Debug("worker stream ended", "worker", bound, "remote", s.RemoteAddr(), "err", err)
			}
			if errors.Is(err, transport.ErrBadWorkerMessage) {
				m.met.badStreams.Inc()
			}
			return
		}
		if named := namedWorker(msg); certID != "" && named != "" && named != certID {
			m.refuseImpersonation(s, certID, named)
			return
		}
		start := time.Now()
		var reply transport.ControllerMessage
		var id string
		switch msg := msg.(type) {
		case *transport.Heartbeat:
			id = msg.WorkerID
			if bound != "" && id != bound {
				break
			}
			reply = m.heartbeat(s, out, msg)
		case *transport.Register:
			id = msg.WorkerID
			if bound != "" && id != bound {
				break
			}
			reply = m.register(s, out, msg)
		case *transport.AllocReport:
			if bound == "" {
				continue // before the stream's first heartbeat: the worker repeats it
			}
			if msg.WorkerID != bound {
				break
			}
			m.jobs.enqueueReport(msg, out)
			continue
		case *transport.LogData:
			m.jobs.deliverLog(bound, msg)
			continue
		default:
			m.met.badStreams.Inc()
			m.log.Warn("closing worker stream: unexpected message", "remote", s.RemoteAddr(), "type", fmt.Sprintf("%T", msg))
			return
		}
		if reply == nil {
			m.met.badStreams.Inc()
			m.log.Warn("closing worker stream: it spoke for two workers", "first", bound, "then", id, "remote", s.RemoteAddr())
			return
		}
		bound = id
		if err := out.write(reply); err != nil {
			m.log.Debug("worker stream write failed", "worker", bound, "err", err)
			return
		}
		if hb, ok := msg.(*transport.Heartbeat); ok && !hb.Leaving { // a leave waits for a commit
			m.met.handleSeconds.Observe(time.Since(start).Seconds())
		} else if _, ok := msg.(*transport.Register); ok {
			m.AssignmentsChanged() // the registration moved its assignment version
		}
	}
}

// namedWorker is the worker a message speaks for ("" if it names none).
func namedWorker(msg transport.WorkerMessage) string {
	switch msg := msg.(type) {
	case *transport.Heartbeat:
		return msg.WorkerID
	case *transport.Register:
		return msg.WorkerID
	case *transport.AllocReport:
		return msg.WorkerID
	}
	return ""
}

// refuseImpersonation counts, and logs once a minute per certificate, a
// stream whose message named another worker than its certificate. The
// stream is closed before the message touches any state.
func (m *Manager) refuseImpersonation(s transport.Stream, certID, named string) {
	m.met.impersonations.Inc()
	if m.impersonations.Due(certID, time.Now()) {
		m.log.Warn("closing worker stream: message for another worker than its certificate",
			"certificate_worker", certID, "message_worker", named, "remote", s.RemoteAddr())
	}
}

// SessionReadBuffer is the per-session read buffer at the leader (bufio's
// minimum is 16 bytes).
const SessionReadBuffer = 512

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}
