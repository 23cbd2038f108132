package transport

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleWorkerMessages() []WorkerMessage {
	return []WorkerMessage{
		&Register{Seq: 1, WorkerID: "w-1", Incarnation: "abcd", Version: "dev", Addresses: []string{"10.0.0.1:9000"},
			Labels: map[string]string{"zone": "a", "gpu": "yes"}, CPUMillis: 4000, MemoryMB: 8192,
			HeartbeatIntervalMS: 1000, SeenControllerEpoch: 7},
		&Register{Seq: 2, WorkerID: "w-1", Incarnation: "inc", SeenControllerEpoch: 7, HeldEpoch: 3},
		&Register{WorkerID: "w-2", Incarnation: "x"},
		&Heartbeat{Seq: 1 << 40, WorkerID: "w-1", Incarnation: "abcd", Epoch: 3,
			Load: WorkerLoad{CPUMillis: 1500, MemoryMB: 900, RunningTasks: 2}, Leaving: true, HeartbeatIntervalMS: 1000,
			SeenControllerEpoch: 9, AssignVersion: 12},
		&Registered{ControllerEpoch: 9, Seq: 1, LeaderID: 2, Epoch: 4, SessionTimeoutMS: 5000},
		&HeartbeatAck{ControllerEpoch: 9, Seq: 17, Epoch: 4, SessionTimeoutMS: 5000, Left: true},
		&Redirect{ControllerEpoch: 9, Seq: 3, LeaderID: 1, LeaderAddr: "127.0.0.1:7001"},
		&Redirect{ControllerEpoch: 9},
		&Refused{ControllerEpoch: 9, Seq: 2, Code: RefuseDuplicate, Message: "held by a live session"},
		&Assign{ControllerEpoch: 9, Epoch: 4, Version: 33, Specs: map[string]string{"a": `{"name":"a"}`, "b": "{}"},
			Allocs: []AssignedAlloc{{ID: "x1", Job: "a", Desired: "run", RestartGen: 2}, {ID: "x2", Job: "b", Desired: "stop"}}},
		&Assign{ControllerEpoch: 9, Epoch: 4, Version: 34},
		&ReportAck{ControllerEpoch: 9, Seq: 5},
		&LogRequest{ControllerEpoch: 9, ReqID: 8, AllocID: "x1", Stream: "stdout", Offset: -1, Tail: 10, Max: 4096},
		&AllocReport{Seq: 6, WorkerID: "w-1", Epoch: 4, Statuses: []AllocStatus{
			{ID: "x1", State: "exited", HasExit: true, ExitCode: -1, Restarts: 2, Message: "killed", AtMS: 1700000000000},
			{ID: "x2", State: "running", AtMS: 1}}},
		&LogData{ReqID: 8, Next: 1234, Data: []byte("hello\n")},
		&LogData{ReqID: 9, Next: -1, Err: "no such allocation"},
	}
}

func TestWorkerProto_RoundTrip(t *testing.T) {
	var stream []byte
	stream = append(stream, WorkerPreamble()...)
	for _, m := range sampleWorkerMessages() {
		var err error
		stream, err = AppendWorkerFrame(stream, m)
		require.NoError(t, err)
	}
	r := bytes.NewReader(stream)
	require.NoError(t, ReadWorkerPreamble(r))
	var buf []byte
	for _, want := range sampleWorkerMessages() {
		got, b, err := ReadWorkerMessage(r, buf)
		require.NoError(t, err)
		buf = b
		require.Equal(t, want, got)
	}
	_, _, err := ReadWorkerMessage(r, buf)
	require.ErrorContains(t, err, "EOF")
}

func TestWorkerProto_RejectsGarbage(t *testing.T) {
	good, err := AppendWorkerFrame(nil, sampleWorkerMessages()[0])
	require.NoError(t, err)
	payload := good[4:]
	cases := map[string][]byte{
		"empty":        {},
		"unknown type": {99},
		"truncated":    payload[:len(payload)-1],
		"trailing":     append(append([]byte{}, payload...), 0),
		"non-minimal":  {wmRegistered, 0x80, 0x00, 0, 0, 0, 0},
		"bad flag":     {wmHeartbeatAck, 1, 1, 1, 1, 2},
		"refuse zero":  {wmRefused, 1, 1, 0, 0},
		"huge string":  append([]byte{wmRedirect, 1, 1, 1}, binary.AppendUvarint(nil, 1<<30)...),
		"huge count":   {wmRegister, 0, 1, 'a', 1, 'b', 0, 200, 1},
	}
	for name, p := range cases {
		_, err := DecodeWorkerMessage(p)
		require.ErrorIs(t, err, ErrBadWorkerMessage, name)
	}
	// Labels must be sorted and unique, so every message has one encoding.
	dup := []byte{wmRegister, 0, 1, 'a', 1, 'b', 0, 0, 2, 1, 'k', 1, 'v', 1, 'k', 1, 'w', 0, 0, 0, 0}
	_, err = DecodeWorkerMessage(dup)
	require.ErrorContains(t, err, "increasing key order")

	require.ErrorContains(t, ReadWorkerPreamble(strings.NewReader("CRRL\x01")), "magic")
	require.ErrorContains(t, ReadWorkerPreamble(strings.NewReader("CRWK\x02")), "version 2")
	big := &Register{WorkerID: strings.Repeat("x", maxWorkerString+1), Incarnation: "i"}
	_, err = AppendWorkerFrame(nil, big)
	require.Error(t, err)
	// An oversized length prefix is refused before anything is allocated.
	_, _, err = ReadWorkerMessage(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), nil)
	require.ErrorIs(t, err, errFrameTooLarge)
}

func FuzzDecodeWorkerMessage(f *testing.F) {
	for _, m := range sampleWorkerMessages() {
		b, err := AppendWorkerFrame(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[4:])
	}
	f.Add([]byte{})
	f.Add([]byte{wmRefused, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := DecodeWorkerMessage(p)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes (one encoding per
		// message) and decodes to the same message.
		b, err := AppendWorkerFrame(nil, m)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", m, err)
		}
		if !bytes.Equal(b[4:], p) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", p, b[4:])
		}
	})
}
