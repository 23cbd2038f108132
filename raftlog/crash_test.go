package raftlog

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

const (
	helperDirEnv  = "RAFTLOG_HELPER_DIR"
	helperTermEnv = "RAFTLOG_HELPER_TERM"
)

// crashPayload is the deterministic data of entry (i, term), so the parent
// can verify content, not just presence, after the crash.
func crashPayload(i, term uint64) []byte {
	p := fmt.Appendf(nil, "entry %d term %d ", i, term)
	return append(p, bytes.Repeat([]byte{byte('a' + i%26)}, int(i%700))...)
}

// TestHelperWriter is not a test: it is the child process of
// TestKillMidWriteLosesNoAcknowledgedEntry. It appends synced batches forever
// and prints "ACK <last index> <term>" after each Save returns, i.e. after the
// entries are acknowledged as durable.
func TestHelperWriter(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for TestKillMidWriteLosesNoAcknowledgedEntry")
	}
	term, err := strconv.ParseUint(os.Getenv(helperTermEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(term, uint64(time.Now().UnixNano())))
	deadline := time.Now().Add(30 * time.Second) // never outlive a vanished parent for long
	for time.Now().Before(deadline) {
		n := 1 + uint64(rnd.IntN(64))
		batch := make([]*pb.Entry, 0, n)
		for i := last + 1; i <= last+n; i++ {
			batch = append(batch, &pb.Entry{Index: new(i), Term: new(term), Type: pb.EntryNormal.Enum(),
				Data: crashPayload(i, term)})
		}
		if err := s.Save(hardState(term, 1, last), batch, nil, true); err != nil {
			t.Fatal(err)
		}
		last += n
		// os.Stdout is unbuffered: once this returns the ack is in the pipe.
		fmt.Printf("ACK %d %d\n", last, term)
	}
	t.Fatal("helper writer was not killed")
}

// TestKillMidWriteLosesNoAcknowledgedEntry re-executes the test binary as a
// writer, SIGKILLs it at a random moment while it is appending, reopens the
// store and checks that every acknowledged entry is present and intact.
// Several rounds run on the same directory, so recovery of a store that was
// itself recovered after a crash is covered too.
func TestKillMidWriteLosesNoAcknowledgedEntry(t *testing.T) {
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var maxAcked uint64
	ackTerm := map[uint64]uint64{} // acknowledged last index -> term
	for round := uint64(1); round <= 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, helperTermEnv+"="+strconv.FormatUint(round, 10))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())

		killAfter := time.Duration(rnd.IntN(150)) * time.Millisecond
		var timer *time.Timer
		acks := 0
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "ACK" {
				continue
			}
			idx, err1 := strconv.ParseUint(f[1], 10, 64)
			term, err2 := strconv.ParseUint(f[2], 10, 64)
			require.NoError(t, err1)
			require.NoError(t, err2)
			ackTerm[idx] = term
			maxAcked = max(maxAcked, idx)
			if acks++; acks == 1 {
				// Arm the kill once the child is demonstrably writing.
				timer = time.AfterFunc(killAfter, func() { _ = cmd.Process.Kill() })
			}
		}
		err = cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.Truef(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL,
			"child was not killed (err %v, %d acks); stderr:\n%s", err, acks, stderr.String())
		t.Logf("round %d: killed after %v, %d acks, max acked index %d", round, killAfter, acks, maxAcked)

		s, err := Open(Options{Dir: dir, Logger: quietLogger()})
		require.NoError(t, err, "store must open after SIGKILL")
		last, err := s.LastIndex()
		require.NoError(t, err)
		require.GreaterOrEqual(t, last, maxAcked, "acknowledged entries lost")
		for idx, term := range ackTerm {
			got, err := s.Term(idx)
			require.NoError(t, err)
			require.Equal(t, term, got, "term of acknowledged entry %d", idx)
		}
		all, err := s.Entries(1, last+1, math.MaxUint64)
		require.NoError(t, err)
		require.Len(t, all, int(last))
		for _, e := range all {
			require.Equal(t, crashPayload(e.GetIndex(), e.GetTerm()), e.GetData(), "entry %d", e.GetIndex())
		}
		require.NoError(t, s.Close())
	}
}
