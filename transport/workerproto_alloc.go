package transport

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Allocation messages of the worker protocol (docs/ENCODING.md): the
// leader's assignment of allocations to a worker epoch, the worker's state
// reports and their acknowledgement, and log reads.

const (
	// MaxSpecBytes bounds one job spec carried in an assignment.
	MaxSpecBytes = 256 << 10
	// MaxLogChunk bounds the log bytes of one LogData message.
	MaxLogChunk     = 128 << 10
	maxAssignAllocs = 100000
	maxReports      = 4096
)

// AssignedAlloc is one allocation the worker must run (Desired "run") or
// stop ("stop").
type AssignedAlloc struct {
	ID         string
	Job        string
	Desired    string
	RestartGen uint64
}

// Assign is the complete set of allocations of one worker epoch, sent when
// it changed or when a heartbeat shows the worker has an older version.
// Specs holds the job spec (JSON) of every job named by Allocs.
type Assign struct {
	ControllerEpoch uint64
	Epoch           uint64
	Version         uint64
	Specs           map[string]string
	Allocs          []AssignedAlloc
}

// AllocStatus is one state change of one allocation, seen by its worker.
type AllocStatus struct {
	ID       string
	State    string
	HasExit  bool
	ExitCode int64
	Restarts uint64
	Message  string
	AtMS     uint64
}

// AllocReport carries state changes from a worker epoch. The worker sends
// it again until a ReportAck with its Seq arrives.
type AllocReport struct {
	Seq      uint64
	WorkerID string
	Epoch    uint64
	Statuses []AllocStatus
}

// ReportAck says the reports of Seq are committed (or were refused because
// the epoch is not live, which a heartbeat will tell).
type ReportAck struct {
	ControllerEpoch uint64
	Seq             uint64
}

// LogRequest asks for a piece of an allocation's log. Offset < 0 means
// "the last Tail lines" (or the last Max bytes when Tail is 0).
type LogRequest struct {
	ControllerEpoch uint64
	ReqID           uint64
	AllocID         string
	Stream          string
	Offset          int64
	Tail            uint64
	Max             uint64
}

// LogData answers a LogRequest: Data starts where asked and Next is the
// offset to ask for next. Err is non-empty when the log cannot be read.
type LogData struct {
	ReqID uint64
	Next  int64
	Data  []byte
	Err   string
}

func (*Assign) workerMsgType() byte      { return wmAssign }
func (*ReportAck) workerMsgType() byte   { return wmReportAck }
func (*LogRequest) workerMsgType() byte  { return wmLogRequest }
func (*AllocReport) workerMsgType() byte { return wmAllocReport }
func (*LogData) workerMsgType() byte     { return wmLogData }

// CtrlEpoch implements ControllerMessage.
func (m *Assign) CtrlEpoch() uint64 { return m.ControllerEpoch }

// CtrlEpoch implements ControllerMessage.
func (m *ReportAck) CtrlEpoch() uint64 { return m.ControllerEpoch }

// CtrlEpoch implements ControllerMessage.
func (m *LogRequest) CtrlEpoch() uint64 { return m.ControllerEpoch }

func appendAllocMessage(b []byte, m WorkerMessage) ([]byte, error) {
	switch m := m.(type) {
	case *Assign:
		b = appendUvarints(b, m.ControllerEpoch, m.Epoch, m.Version, uint64(len(m.Specs)))
		for _, k := range sortedKeys(m.Specs) {
			if len(k) > maxWorkerString || len(m.Specs[k]) > MaxSpecBytes {
				return nil, fmt.Errorf("assign: spec of job %q too large", k)
			}
			b = appendStrings(b, k, m.Specs[k])
		}
		b = binary.AppendUvarint(b, uint64(len(m.Allocs)))
		for _, a := range m.Allocs {
			if err := checkLens([]string{a.ID, a.Job, a.Desired}); err != nil {
				return nil, fmt.Errorf("assign: %w", err)
			}
			b = appendStrings(b, a.ID, a.Job, a.Desired)
			b = binary.AppendUvarint(b, a.RestartGen)
		}
	case *ReportAck:
		b = appendUvarints(b, m.ControllerEpoch, m.Seq)
	case *LogRequest:
		if err := checkLens([]string{m.AllocID, m.Stream}); err != nil {
			return nil, fmt.Errorf("log request: %w", err)
		}
		b = appendUvarints(b, m.ControllerEpoch, m.ReqID)
		b = appendStrings(b, m.AllocID, m.Stream)
		b = binary.AppendVarint(b, m.Offset)
		b = appendUvarints(b, m.Tail, m.Max)
	case *AllocReport:
		if len(m.Statuses) > maxReports {
			return nil, fmt.Errorf("alloc report: %d statuses, limit %d", len(m.Statuses), maxReports)
		}
		b = appendUvarints(b, m.Seq)
		b = appendStrings(b, m.WorkerID)
		b = appendUvarints(b, m.Epoch, uint64(len(m.Statuses)))
		for _, st := range m.Statuses {
			msg := st.Message
			if len(msg) > maxWorkerString {
				msg = msg[:maxWorkerString]
			}
			if err := checkLens([]string{st.ID, st.State}); err != nil {
				return nil, fmt.Errorf("alloc report: %w", err)
			}
			b = appendStrings(b, st.ID, st.State)
			b = binary.AppendUvarint(b, boolU(st.HasExit))
			b = binary.AppendVarint(b, st.ExitCode)
			b = appendUvarints(b, st.Restarts)
			b = appendStrings(b, msg)
			b = appendUvarints(b, st.AtMS)
		}
	case *LogData:
		if len(m.Data) > MaxLogChunk {
			return nil, fmt.Errorf("log data: %d bytes, limit %d", len(m.Data), MaxLogChunk)
		}
		e := m.Err
		if len(e) > maxWorkerString {
			e = e[:maxWorkerString]
		}
		b = appendUvarints(b, m.ReqID)
		b = binary.AppendVarint(b, m.Next)
		b = appendStrings(b, string(m.Data), e)
	default:
		return nil, fmt.Errorf("unknown worker message %T", m)
	}
	return b, nil
}

func decodeAllocMessage(d *wdecoder, typ byte) WorkerMessage {
	switch typ {
	case wmAssign:
		a := &Assign{ControllerEpoch: d.uvarint(), Epoch: d.uvarint(), Version: d.uvarint()}
		if n := d.count(maxAssignAllocs); n > 0 {
			a.Specs = make(map[string]string, min(n, 64))
			prev := ""
			for i := 0; i < n && d.err == nil; i++ {
				k, v := d.str(), d.strN(MaxSpecBytes)
				if i > 0 && k <= prev {
					d.fail("specs not in strictly increasing job order")
				}
				a.Specs[k], prev = v, k
			}
		}
		if n := d.count(maxAssignAllocs); n > 0 && d.err == nil {
			a.Allocs = make([]AssignedAlloc, 0, min(n, 1024))
			for i := 0; i < n && d.err == nil; i++ {
				a.Allocs = append(a.Allocs, AssignedAlloc{ID: d.str(), Job: d.str(), Desired: d.str(), RestartGen: d.uvarint()})
			}
		}
		return a
	case wmReportAck:
		return &ReportAck{ControllerEpoch: d.uvarint(), Seq: d.uvarint()}
	case wmLogRequest:
		return &LogRequest{ControllerEpoch: d.uvarint(), ReqID: d.uvarint(), AllocID: d.str(), Stream: d.str(),
			Offset: d.varint(), Tail: d.uvarint(), Max: d.uvarint()}
	case wmAllocReport:
		r := &AllocReport{Seq: d.uvarint(), WorkerID: d.str(), Epoch: d.uvarint()}
		if n := d.count(maxReports); n > 0 && d.err == nil {
			r.Statuses = make([]AllocStatus, 0, min(n, 256))
			for i := 0; i < n && d.err == nil; i++ {
				st := AllocStatus{ID: d.str(), State: d.str(), HasExit: d.flag(), ExitCode: d.varint(), Restarts: d.uvarint()}
				st.Message, st.AtMS = d.str(), d.uvarint()
				r.Statuses = append(r.Statuses, st)
			}
		}
		return r
	case wmLogData:
		l := &LogData{ReqID: d.uvarint(), Next: d.varint()}
		if data := d.strN(MaxLogChunk); len(data) > 0 {
			l.Data = []byte(data)
		}
		l.Err = d.str()
		return l
	}
	d.fail(fmt.Sprintf("unknown message type %d", typ))
	return nil
}

// varint reads a signed varint: binary.AppendVarint writes the zig-zag
// form as a uvarint, so the same bounds and minimality checks apply.
func (d *wdecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
