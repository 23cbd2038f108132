package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// Worker session wire format, version 1 (docs/ENCODING.md). The worker
// dials and first writes the preamble "CRWK" 0x01; then both sides write
// frames:
//
//	frame:   length u32 big-endian (<= MaxWorkerFrame) | type u8 | fields
//	fields:  uvarints and length-prefixed (uvarint) strings, in the order
//	         of the message's struct; a message ends exactly at its frame.
//
// Every controller→worker message carries ControllerEpoch: the raft term
// of the leader that sent it (for a redirect, the sender's current term).
// Decoders return errors on garbage and never panic (FuzzDecodeWorkerMessage).

// DefaultSessionTimeout is how long a worker may stay silent before the
// leader fences it. Both ends of the protocol derive their timers from it
// (the worker fences itself at 0.6 of it), so it lives with the protocol.
//
// A leader failover must fit in the worker's self-fence margin (6 s):
// noticing the silent leader (0.75 of a 1 s heartbeat interval), an
// election (randomized 0.7-1.4 s at 7 ticks of 100 ms; milliseconds when
// the leader's process ended, transport/liveness.go) and, rarely, a second
// one after a split vote, learning the winner (a new leader beckons, or a
// re-ask at most a quarter interval late) and resuming the session there:
// about 3.2 s in the worst case (docs/ARCHITECTURE.md, "What a failover
// costs a worker"). 5 s, the old default, left 3 s and fenced workers on
// ordinary failovers. KRaft's broker session timeout is 9 s, Nomad's minimum
// heartbeat TTL 10 s.
const DefaultSessionTimeout = 10 * time.Second

const (
	workerMagic   = "CRWK"
	workerVersion = 1
	// MaxWorkerFrame bounds one frame a worker sends.
	MaxWorkerFrame = 256 << 10
	// MaxControllerFrame bounds one frame a controller sends: an
	// assignment lists every allocation of a worker with their specs.
	MaxControllerFrame = 16 << 20
	// Limits on registration contents, checked when decoding.
	maxWorkerString    = 1024
	maxWorkerLabels    = 64
	maxWorkerAddresses = 16
)

// Worker message types.
const (
	wmRegister     = 1
	wmHeartbeat    = 2
	wmAllocReport  = 3
	wmLogData      = 4
	wmRegistered   = 10
	wmHeartbeatAck = 11
	wmRedirect     = 12
	wmRefused      = 13
	wmAssign       = 14
	wmReportAck    = 15
	wmLogRequest   = 16
)

// WorkerMessage is any message of the worker protocol.
type WorkerMessage interface{ workerMsgType() byte }

// ControllerMessage is a message a controller sends to a worker.
type ControllerMessage interface {
	WorkerMessage
	// CtrlEpoch is the sender's controller epoch.
	CtrlEpoch() uint64
}

// WorkerLoad is what a worker reports in each heartbeat.
type WorkerLoad struct {
	CPUMillis    uint64 // CPU in use, millicores
	MemoryMB     uint64 // memory in use
	RunningTasks uint64
}

// Register asks the leader for a new epoch.
type Register struct {
	Seq                 uint64
	WorkerID            string
	Incarnation         string
	Version             string
	Addresses           []string
	Labels              map[string]string
	CPUMillis           uint64
	MemoryMB            uint64
	HeartbeatIntervalMS uint64
	SeenControllerEpoch uint64
	// HeldEpoch is the epoch this process last held and gave up (it fenced
	// itself or was refused), 0 when it never held one. A leader whose
	// record of the worker is this incarnation at a later, unfenced epoch
	// answers with that epoch: the worker never heard that it registered.
	// Encoded only when non-zero (older workers never send it).
	HeldEpoch uint64
}

// Heartbeat reports liveness and load for one epoch. Leaving asks to be
// marked left (graceful shutdown).
type Heartbeat struct {
	Seq                 uint64
	WorkerID            string
	Incarnation         string
	Epoch               uint64
	Load                WorkerLoad
	Leaving             bool
	HeartbeatIntervalMS uint64
	SeenControllerEpoch uint64
	// AssignVersion is the version of the last assignment the worker
	// applied; the leader sends a new one when its own is newer.
	AssignVersion uint64
}

// Registered answers a Register with the worker's new epoch.
type Registered struct {
	ControllerEpoch  uint64
	Seq              uint64
	LeaderID         uint64
	Epoch            uint64
	SessionTimeoutMS uint64
}

// HeartbeatAck acknowledges a heartbeat. Left confirms a Leaving heartbeat.
type HeartbeatAck struct {
	ControllerEpoch  uint64
	Seq              uint64
	Epoch            uint64
	SessionTimeoutMS uint64
	Left             bool
}

// Redirect tells the worker to go to the leader. LeaderAddr is "" when the
// sender knows no leader: try again shortly, elsewhere.
type Redirect struct {
	ControllerEpoch uint64
	Seq             uint64
	LeaderID        uint64
	LeaderAddr      string
}

// RefuseCode says why a controller refused a message.
type RefuseCode uint8

// Refusal reasons.
const (
	// RefuseStaleEpoch: the epoch in the heartbeat is not the worker's
	// current live epoch (it was fenced or superseded): register again.
	RefuseStaleEpoch RefuseCode = 1
	// RefuseDuplicate: another process holds a live session for this id.
	RefuseDuplicate RefuseCode = 2
	// RefuseNotReady: the leader is still loading or could not commit;
	// retry shortly.
	RefuseNotReady RefuseCode = 3
	// RefuseInvalid: the message is not acceptable (bad id, labels...).
	RefuseInvalid RefuseCode = 4
)

func (c RefuseCode) String() string {
	switch c {
	case RefuseStaleEpoch:
		return "stale_epoch"
	case RefuseDuplicate:
		return "duplicate"
	case RefuseNotReady:
		return "not_ready"
	case RefuseInvalid:
		return "invalid"
	}
	return fmt.Sprintf("refuse(%d)", uint8(c))
}

// Refused refuses a Register or Heartbeat.
type Refused struct {
	ControllerEpoch uint64
	Seq             uint64
	Code            RefuseCode
	Message         string
}

func (*Register) workerMsgType() byte     { return wmRegister }
func (*Heartbeat) workerMsgType() byte    { return wmHeartbeat }
func (*Registered) workerMsgType() byte   { return wmRegistered }
func (*HeartbeatAck) workerMsgType() byte { return wmHeartbeatAck }
func (*Redirect) workerMsgType() byte     { return wmRedirect }
func (*Refused) workerMsgType() byte      { return wmRefused }

// CtrlEpoch implements ControllerMessage.
func (m *Registered) CtrlEpoch() uint64 { return m.ControllerEpoch }

// CtrlEpoch implements ControllerMessage.
func (m *HeartbeatAck) CtrlEpoch() uint64 { return m.ControllerEpoch }

// CtrlEpoch implements ControllerMessage.
func (m *Redirect) CtrlEpoch() uint64 { return m.ControllerEpoch }

// CtrlEpoch implements ControllerMessage.
func (m *Refused) CtrlEpoch() uint64 { return m.ControllerEpoch }

// WorkerPreamble returns the bytes a worker writes first on a new stream.
func WorkerPreamble() []byte { return append([]byte(workerMagic), workerVersion) }

// ReadWorkerPreamble reads and checks the preamble.
func ReadWorkerPreamble(r io.Reader) error {
	var b [5]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("read worker preamble: %w", err)
	}
	if string(b[:4]) != workerMagic {
		return fmt.Errorf("bad worker preamble magic %q", b[:4])
	}
	if b[4] != workerVersion {
		return fmt.Errorf("unsupported worker protocol version %d", b[4])
	}
	return nil
}

// AppendWorkerFrame appends m as one length-prefixed frame to b.
func AppendWorkerFrame(b []byte, m WorkerMessage) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0, m.workerMsgType())
	var err error
	switch m := m.(type) {
	case *Register:
		if len(m.Labels) > maxWorkerLabels || len(m.Addresses) > maxWorkerAddresses {
			return nil, fmt.Errorf("register: at most %d labels and %d addresses", maxWorkerLabels, maxWorkerAddresses)
		}
		strs := append([]string{m.WorkerID, m.Incarnation, m.Version}, m.Addresses...)
		for k, v := range m.Labels {
			strs = append(strs, k, v)
		}
		if err := checkLens(strs); err != nil {
			return nil, fmt.Errorf("register: %w", err)
		}
		b = appendUvarints(b, m.Seq)
		b = appendStrings(b, m.WorkerID, m.Incarnation, m.Version)
		b = binary.AppendUvarint(b, uint64(len(m.Addresses)))
		b = appendStrings(b, m.Addresses...)
		keys := make([]string, 0, len(m.Labels))
		for k := range m.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = appendStrings(b, k, m.Labels[k])
		}
		b = appendUvarints(b, m.CPUMillis, m.MemoryMB, m.HeartbeatIntervalMS, m.SeenControllerEpoch)
		if m.HeldEpoch != 0 {
			b = appendUvarints(b, m.HeldEpoch)
		}
	case *Heartbeat:
		if err := checkLens([]string{m.WorkerID, m.Incarnation}); err != nil {
			return nil, fmt.Errorf("heartbeat: %w", err)
		}
		b = appendUvarints(b, m.Seq)
		b = appendStrings(b, m.WorkerID, m.Incarnation)
		b = appendUvarints(b, m.Epoch, m.Load.CPUMillis, m.Load.MemoryMB, m.Load.RunningTasks, boolU(m.Leaving),
			m.HeartbeatIntervalMS, m.SeenControllerEpoch, m.AssignVersion)
	case *Registered:
		b = appendUvarints(b, m.ControllerEpoch, m.Seq, m.LeaderID, m.Epoch, m.SessionTimeoutMS)
	case *HeartbeatAck:
		b = appendUvarints(b, m.ControllerEpoch, m.Seq, m.Epoch, m.SessionTimeoutMS, boolU(m.Left))
	case *Redirect:
		if err := checkLens([]string{m.LeaderAddr}); err != nil {
			return nil, fmt.Errorf("redirect: %w", err)
		}
		b = appendUvarints(b, m.ControllerEpoch, m.Seq, m.LeaderID)
		b = appendStrings(b, m.LeaderAddr)
	case *Refused:
		b = appendUvarints(b, m.ControllerEpoch, m.Seq, uint64(m.Code))
		msg := m.Message
		if len(msg) > maxWorkerString {
			msg = msg[:maxWorkerString]
		}
		b = appendStrings(b, msg)
	default:
		b, err = appendAllocMessage(b, m)
	}
	if err != nil {
		return nil, err
	}
	n := len(b) - start - 4
	limit := MaxWorkerFrame
	if _, ok := m.(ControllerMessage); ok {
		limit = MaxControllerFrame
	}
	if n > limit {
		return nil, fmt.Errorf("worker message %T is %d bytes: %w (limit %d)", m, n, errFrameTooLarge, limit)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(n))
	return b, nil
}

// ReadWorkerMessage reads and decodes one frame a worker sent (at most
// MaxWorkerFrame bytes); buf is reused when large enough.
func ReadWorkerMessage(r io.Reader, buf []byte) (WorkerMessage, []byte, error) {
	return readWorkerMessage(r, buf, MaxWorkerFrame)
}

// ReadControllerMessage reads and decodes one frame a controller sent (at
// most MaxControllerFrame bytes).
func ReadControllerMessage(r io.Reader, buf []byte) (WorkerMessage, []byte, error) {
	return readWorkerMessage(r, buf, MaxControllerFrame)
}

func readWorkerMessage(r io.Reader, buf []byte, max uint32) (WorkerMessage, []byte, error) {
	frame, err := readFrame(r, max, buf)
	if err != nil {
		return nil, buf, err
	}
	m, err := DecodeWorkerMessage(frame)
	return m, frame, err
}

// DecodeWorkerMessage decodes one frame payload (without its length). The
// result shares no memory with p.
func DecodeWorkerMessage(p []byte) (WorkerMessage, error) {
	d := &wdecoder{b: p}
	typ := d.byte()
	var m WorkerMessage
	switch typ {
	case wmRegister:
		r := &Register{Seq: d.uvarint(), WorkerID: d.str(), Incarnation: d.str(), Version: d.str()}
		if n := d.count(maxWorkerAddresses); n > 0 {
			r.Addresses = make([]string, n)
			for i := range r.Addresses {
				r.Addresses[i] = d.str()
			}
		}
		if n := d.count(maxWorkerLabels); n > 0 {
			r.Labels = make(map[string]string, n)
			prev := ""
			for i := 0; i < n && d.err == nil; i++ {
				k, v := d.str(), d.str()
				if i > 0 && k <= prev {
					d.fail("labels not in strictly increasing key order")
				}
				r.Labels[k], prev = v, k
			}
		}
		r.CPUMillis, r.MemoryMB, r.HeartbeatIntervalMS, r.SeenControllerEpoch = d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
		if d.err == nil && d.off < len(p) {
			if r.HeldEpoch = d.uvarint(); r.HeldEpoch == 0 {
				d.fail("held epoch 0 is written by leaving it out") // one encoding per message
			}
		}
		m = r
	case wmHeartbeat:
		h := &Heartbeat{Seq: d.uvarint(), WorkerID: d.str(), Incarnation: d.str(), Epoch: d.uvarint()}
		h.Load = WorkerLoad{CPUMillis: d.uvarint(), MemoryMB: d.uvarint(), RunningTasks: d.uvarint()}
		h.Leaving = d.flag()
		h.HeartbeatIntervalMS, h.SeenControllerEpoch, h.AssignVersion = d.uvarint(), d.uvarint(), d.uvarint()
		m = h
	case wmRegistered:
		m = &Registered{ControllerEpoch: d.uvarint(), Seq: d.uvarint(), LeaderID: d.uvarint(), Epoch: d.uvarint(),
			SessionTimeoutMS: d.uvarint()}
	case wmHeartbeatAck:
		m = &HeartbeatAck{ControllerEpoch: d.uvarint(), Seq: d.uvarint(), Epoch: d.uvarint(),
			SessionTimeoutMS: d.uvarint(), Left: d.flag()}
	case wmRedirect:
		m = &Redirect{ControllerEpoch: d.uvarint(), Seq: d.uvarint(), LeaderID: d.uvarint(), LeaderAddr: d.str()}
	case wmRefused:
		r := &Refused{ControllerEpoch: d.uvarint(), Seq: d.uvarint()}
		code := d.uvarint()
		if code == 0 || code > 255 {
			d.fail(fmt.Sprintf("bad refuse code %d", code))
		}
		r.Code, r.Message = RefuseCode(code), d.str()
		m = r
	default:
		if d.err == nil {
			m = decodeAllocMessage(d, typ)
		}
	}
	if d.err == nil && d.off != len(p) {
		d.fail(fmt.Sprintf("%d trailing bytes", len(p)-d.off))
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode worker message: %w", d.err)
	}
	return m, nil
}

// ErrBadWorkerMessage wraps every decoding failure.
var ErrBadWorkerMessage = errors.New("malformed worker message")

// wdecoder is a bounds-checked cursor; the first error sticks and later
// reads return zero values.
type wdecoder struct {
	b   []byte
	off int
	err error
	bad error // wrapped by every error; nil means ErrBadWorkerMessage
}

func (d *wdecoder) fail(msg string) {
	if d.err == nil {
		bad := d.bad
		if bad == nil {
			bad = ErrBadWorkerMessage
		}
		d.err = fmt.Errorf("%w: %s at byte %d", bad, msg, d.off)
	}
}

// end fails on bytes left after the last field.
func (d *wdecoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)-d.off))
	}
	return d.err
}

func (d *wdecoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *wdecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		d.fail("truncated varint")
		return 0
	case n < 0:
		d.fail("varint overflow")
		return 0
	case n > 1 && d.b[d.off+n-1] == 0:
		d.fail("non-minimal varint")
		return 0
	}
	d.off += n
	return v
}

func (d *wdecoder) flag() bool {
	v := d.uvarint()
	if v > 1 {
		d.fail("flag is not 0 or 1")
	}
	return v == 1
}

func (d *wdecoder) count(max int) int {
	v := d.uvarint()
	if v > uint64(max) {
		d.fail(fmt.Sprintf("count %d exceeds %d", v, max))
		return 0
	}
	return int(v)
}

func (d *wdecoder) str() string { return d.strN(maxWorkerString) }

// strN reads a string of at most max bytes.
func (d *wdecoder) strN(max uint64) string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > max || n > uint64(len(d.b)-d.off) {
		d.fail(fmt.Sprintf("string of %d bytes", n))
		return ""
	}
	s := string(d.b[d.off : d.off+int(n)]) // string() copies
	d.off += int(n)
	return s
}

func appendUvarints(b []byte, vs ...uint64) []byte {
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func appendStrings(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func checkLens(ss []string) error {
	for _, s := range ss {
		if len(s) > maxWorkerString {
			return fmt.Errorf("string of %d bytes exceeds %d", len(s), maxWorkerString)
		}
	}
	return nil
}

func boolU(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}
