package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestParseFailover(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		name     string
		every    time.Duration
		kills    int
		killsSet bool
		duration time.Duration
		want     failoverConfig
		err      string
	}{
		{name: "off by default", duration: 30 * s},
		{name: "default kills", every: 10 * s, duration: 40 * s, want: failoverConfig{every: 10 * s, kills: 3}},
		{name: "explicit kills", every: 5 * s, kills: 5, killsSet: true, duration: 30 * s,
			want: failoverConfig{every: 5 * s, kills: 5}},
		{name: "duration one interval short", every: 10 * s, duration: 39 * s,
			err: "--duration 39s is too short for --kills 3 every 10s: the kills fall at 10s, 20s, ... after the measurement starts and the last one needs a whole interval after it; use --duration 40s or more"},
		{name: "duration short for explicit kills", every: 10 * s, kills: 1, killsSet: true, duration: 10 * s,
			err: "use --duration 20s or more"},
		{name: "kills without an interval", kills: 2, killsSet: true, duration: 30 * s,
			err: "--kills 2 needs --kill-leader-every"},
		{name: "zero kills", every: 10 * s, kills: 0, killsSet: true, duration: 30 * s, err: "--kills must be at least 1"},
		{name: "negative interval", every: -s, duration: 30 * s, err: "must not be negative"},
	}
	for _, tt := range tests {
		got, err := parseFailover(tt.every, tt.kills, tt.killsSet, tt.duration)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
		require.Equal(t, tt.every > 0, got.on(), tt.name)
	}
}

// The flags are checked with the others, before the bench looks for a cluster.
func TestBenchWorkersRefusesKillsThatDoNotFit(t *testing.T) {
	// Not parallel: run() drives urfave/cli, whose help flag is shared global state.
	_, _, err := run(t, "bench", "workers", "--endpoints", "http://127.0.0.1:1", "--controllers", "127.0.0.1:1",
		"--tls-dir", t.TempDir(), "--duration", "30s", "--kill-leader-every", "10s")
	require.ErrorContains(t, err, "use --duration 40s or more")
	_, _, err = run(t, "bench", "workers", "--endpoints", "http://127.0.0.1:1", "--controllers", "127.0.0.1:1",
		"--tls-dir", t.TempDir(), "--kills", "2")
	require.ErrorContains(t, err, "--kills 2 needs --kill-leader-every")
}

func TestSplitNUL(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"/bin/corral", "run", "--data-dir=/tmp/x"}, splitNUL([]byte("/bin/corral\x00run\x00--data-dir=/tmp/x\x00")))
	require.Equal(t, []string{"a", "", "b"}, splitNUL([]byte("a\x00\x00b\x00")), "an empty argument stays")
	require.Equal(t, []string{"a"}, splitNUL([]byte("a")), "no trailing NUL")
	require.Nil(t, splitNUL(nil))
	require.Nil(t, splitNUL([]byte{0}))
	require.Equal(t, []string{"PATH=/usr/bin", "A=b=c"}, splitNUL([]byte("PATH=/usr/bin\x00A=b=c\x00")))
}

func TestFlagValueAndLookupEnv(t *testing.T) {
	t.Parallel()
	argv := []string{"corral", "run", "--role=controller", "-node-id", "2", "--data-dir", "d2", "--", "--http-addr=x"}
	require.Equal(t, "controller", flagValue(argv, "role"))
	require.Equal(t, "2", flagValue(argv, "node-id"))
	require.Equal(t, "d2", flagValue(argv, "data-dir"))
	require.Empty(t, flagValue(argv, "http-addr"), "after --: arguments, not flags")
	require.Empty(t, flagValue([]string{"corral", "--data-dir"}, "data-dir"), "no value")
	require.Empty(t, flagValue(argv, "data"))

	env := []string{"A=1", "B", "CORRAL_DATA_DIR=/x=y", "A=2"}
	require.Equal(t, "2", lookupEnv(env, "A"), "the last one wins")
	require.Equal(t, "/x=y", lookupEnv(env, "CORRAL_DATA_DIR"))
	require.Empty(t, lookupEnv(env, "B"))
}

func TestRestartLogPath(t *testing.T) {
	t.Parallel()
	envs := []string{"CORRAL_DATA_DIR"}
	l := procLaunch{argv: []string{"corral", "run", "--data-dir=/tmp/corral-cluster/data-1/"}, dir: "/home/x"}
	require.Equal(t, "/tmp/corral-cluster/data-1.bench-restart.log", restartLogPath(l, envs, 1))
	l = procLaunch{argv: []string{"corral", "run", "--data-dir", "data-2"}, dir: "/srv/c"}
	require.Equal(t, "/srv/c/data-2.bench-restart.log", restartLogPath(l, envs, 2), "relative to its working directory")
	l = procLaunch{argv: []string{"corral", "run"}, dir: "/srv/c", env: []string{"CORRAL_DATA_DIR=/var/lib/corral"}}
	require.Equal(t, "/var/lib/corral.bench-restart.log", restartLogPath(l, envs, 3), "from the environment")
	l = procLaunch{argv: []string{"corral", "run"}, dir: "/srv/c"}
	require.Equal(t, filepath.Join(os.TempDir(), "corral-bench-restart-node-4.log"), restartLogPath(l, envs, 4))
}

func TestProcLaunchBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	prog := filepath.Join(dir, "bin", "corral")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "plain"), nil, 0o644))

	for _, tt := range []struct {
		name string
		l    procLaunch
		want string
	}{
		{"absolute", procLaunch{argv: []string{prog}, dir: "/"}, prog},
		{"relative to the working directory", procLaunch{argv: []string{"scripts/../bin/corral"}, dir: dir}, prog},
		{"from the process's PATH", procLaunch{argv: []string{"corral"}, dir: "/",
			env: []string{"PATH=/nonexistent:" + filepath.Join(dir, "bin")}}, prog},
		{"relative PATH entry", procLaunch{argv: []string{"corral"}, dir: dir, env: []string{"PATH=bin"}}, prog},
		{"gone, but /proc/PID/exe still there", procLaunch{argv: []string{"/old/corral"}, dir: "/", exe: prog}, prog},
	} {
		got, err := tt.l.binary()
		require.NoError(t, err, tt.name)
		require.Equal(t, filepath.Clean(tt.want), got, tt.name)
	}
	_, err := procLaunch{argv: []string{"/old/corral"}, dir: "/tmp", exe: prog + " (deleted)"}.binary()
	require.ErrorContains(t, err, `cannot find the leader's program "/old/corral" (started in /tmp)`)
	_, err = procLaunch{argv: []string{"bin/plain"}, dir: dir}.binary()
	require.Error(t, err, "not executable")
}

func TestReadProcLaunchOfThisProcess(t *testing.T) {
	t.Parallel()
	l, err := readProcLaunch(os.Getpid())
	require.NoError(t, err)
	require.Equal(t, os.Args, l.argv)
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, wd, l.dir)
	require.NotEmpty(t, l.env)
	require.NotEmpty(t, l.exe)
	_, err = readProcLaunch(-1)
	require.Error(t, err)
}

func TestProcState(t *testing.T) {
	t.Parallel()
	require.Equal(t, byte('S'), procState([]byte("123 (a) b) S 1 2 3")), "the name may hold ')'")
	require.Equal(t, byte('Z'), procState([]byte("9 (corral) Z 1")))
	require.Zero(t, procState([]byte("garbage")))
	require.Zero(t, procState([]byte("9 (x)")))
}

// startDetached starts a program again with the argv, working directory and environment read from /proc, its
// output in the log; waitProcessGone sees it die after SIGKILL.
func TestStartDetachedAndWaitProcessGone(t *testing.T) {
	t.Parallel()
	sh, err := procLaunch{argv: []string{"sh"}, dir: "/", env: []string{"PATH=" + os.Getenv("PATH")}}.binary()
	require.NoError(t, err)
	dir := t.TempDir()
	l := procLaunch{argv: []string{"sh", "-c", `echo "arg=$0 foo=$FOO dir=$(pwd)"; exec sleep 60`, "zero"}, dir: dir,
		env: []string{"FOO=bar", "PATH=" + os.Getenv("PATH")}}
	logf, err := openRestartLog(filepath.Join(dir, "no-such-dir", "x.log"), filepath.Join(dir, "fallback.log"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "fallback.log"), logf.Name(), "an unwritable place falls back")
	pid, err := startDetached(l, sh, logf)
	require.NoError(t, logf.Close())
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	want := "arg=zero foo=bar dir=" + dir + "\n"
	require.Eventually(t, func() bool { b, _ := os.ReadFile(logf.Name()); return string(b) == want },
		10*time.Second, 5*time.Millisecond)
	b, _ := os.ReadFile(logf.Name())
	require.Equal(t, want, string(b))
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])) // state, ppid, pgrp, session
	require.Equal(t, strconv.Itoa(pid), f[3], "a session of its own: a ^C to the bench does not reach it")
	require.False(t, processGone(pid))

	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	took, err := waitProcessGone(t.Context(), pid, 10*time.Second)
	require.NoError(t, err)
	require.Less(t, took, 10*time.Second)
	require.True(t, processGone(pid))

	_, err = waitProcessGone(t.Context(), os.Getpid(), 20*time.Millisecond)
	require.ErrorContains(t, err, "still runs")
}

func TestWorkerFencingsAreTold(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	self := prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_worker_self_fencings_total"})
	byCtrl := prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_worker_fenced_by_controller_total"})
	reg.MustRegister(self, byCtrl)
	var s simSession
	self.Inc()
	s.onFenced(reg)
	byCtrl.Inc()
	s.onFenced(reg)
	self.Inc()
	s.onFenced(reg)
	require.Len(t, s.fences, 3)
	require.Equal(t, []bool{false, true, false},
		[]bool{s.fences[0].byController, s.fences[1].byController, s.fences[2].byController})
	a, b := workerFencings(reg)
	require.Equal(t, []float64{2, 1}, []float64{a, b})
}

func TestCtrlFencingsSince(t *testing.T) {
	t.Parallel()
	prev := ctrlFencings{"a": {pid: 1, fencings: 5}, "b": {pid: 2, fencings: 1}, "c": {pid: 3, fencings: 7}}
	next := ctrlFencings{"a": {pid: 1, fencings: 6}, "b": {pid: 9, fencings: 2}}
	// a counted one more; b was restarted (its counter began at 0); c did not answer.
	require.Equal(t, 3.0, next.since(prev))
	require.Zero(t, prev.since(prev))
}

// failoverWindows attributes resumes, fencings and new epochs to the kill they followed; printFailover prints
// them and fails when any worker lost its session.
func TestFailoverWindowsAndReport(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	kills := []killRecord{{n: 1, leaderID: 1, at: at(10)}, {n: 2, leaderID: 2, at: at(20)}}
	ctrl := []ctrlFencings{
		{"a": {1, 0}, "b": {2, 0}, "c": {3, 0}},
		{"a": {1, 0}, "b": {2, 0}, "c": {3, 0}},
		{"a": {11, 0}, "b": {2, 1}, "c": {3, 0}}, // a restarted, b fenced one after kill 1
		{"a": {11, 0}, "c": {3, 0}},              // b is being killed
	}
	ok := &simSession{firstEpoch: 4, alive: []epochAt{{4, at(-5)}}, resumed: []time.Time{at(12), at(22.5)}}
	slow := &simSession{firstEpoch: 5, alive: []epochAt{{5, at(-5)}}, resumed: []time.Time{at(13)}}
	fenced := &simSession{firstEpoch: 6, alive: []epochAt{{6, at(-5)}, {9, at(27)}}, resumed: []time.Time{at(11)},
		fences: []fenceAt{{at: at(-1), byController: false}, {at: at(26), byController: false},
			{at: at(26.5), byController: true}}}
	ws := failoverWindows(kills, []*simSession{ok, slow, fenced}, t0, at(30), ctrl)
	require.Len(t, ws, 4, "before the first kill, two kills, the total")

	require.Zero(t, ws[0].kill)
	require.False(t, ws[0].harmed(), "the fencing before the measurement is the ramp's")
	require.Equal(t, 1, ws[1].kill)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, ws[1].resumes)
	require.Zero(t, ws[1].notResumed)
	require.Equal(t, 1.0, ws[1].ctrlFencings)
	require.Equal(t, 2, ws[2].kill)
	require.Equal(t, []time.Duration{2500 * time.Millisecond}, ws[2].resumes)
	require.Equal(t, 2, ws[2].notResumed)
	require.Equal(t, []int{1, 1, 1}, []int{ws[2].selfFenced, ws[2].ctrlFenced, ws[2].newEpoch})
	total := ws[3]
	require.Equal(t, -1, total.kill)
	require.Len(t, total.resumes, 4)
	require.Equal(t, 2, total.notResumed)
	require.Equal(t, 1.0, total.ctrlFencings)
	require.Equal(t, []int{1, 1, 1}, []int{total.selfFenced, total.ctrlFenced, total.newEpoch})

	var out bytes.Buffer
	err := printFailover(&out, 10*time.Second, ws, nil, []int{4242})
	require.ErrorContains(t, err, "killing the leader every 10s cost workers their sessions: 1 fenced themselves, "+
		"1 were fenced by a leader, the controllers fenced 1, 1 registered again with a new epoch")
	lines := strings.Split(out.String(), "\n")
	require.Contains(t, lines[0], "failover: 2 kill(s) of the leader")
	require.Equal(t, []string{"KILL", "LEADER", "RESUMED", "NOT-RESUMED", "RESUME-P50", "RESUME-P99", "RESUME-MAX",
		"SELF-FENCED", "FENCED-BY-CTRL", "CTRL-FENCINGS", "NEW-EPOCH"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"1", "1", "3", "0", "2s", "3s", "3s", "0", "0", "1", "0"}, strings.Fields(lines[2]))
	require.Equal(t, []string{"2", "2", "1", "2", "2.5s", "2.5s", "2.5s", "1", "1", "0", "1"}, strings.Fields(lines[3]))
	require.Equal(t, []string{"all", "-", "4", "2", "2s", "3s", "3s", "1", "1", "1", "1"}, strings.Fields(lines[4]))
	require.Contains(t, out.String(), "pids 4242")

	// A clean run says so and succeeds.
	clean := failoverWindows(kills, []*simSession{ok}, t0, at(30), nil)
	out.Reset()
	require.NoError(t, printFailover(&out, 10*time.Second, clean, nil, nil))
	require.Contains(t, out.String(), "failover cost: no worker fenced or given a new epoch")
	require.NotContains(t, out.String(), "restarted controllers")
	early := &simSession{firstEpoch: 7, alive: []epochAt{{7, at(-5)}}, resumed: []time.Time{at(11), at(21)},
		fences: []fenceAt{{at: at(5)}}}
	out.Reset()
	require.Error(t, printFailover(&out, 10*time.Second, failoverWindows(kills, []*simSession{early}, t0, at(30), nil), nil, nil))
	require.Contains(t, out.String(), "\n  before       -        -            -           -           -           -            1", "a fencing before the first kill still fails the run")
	out.Reset()
	require.NoError(t, printFailover(&out, 10*time.Second, clean, nil, nil))
	for _, l := range strings.Split(out.String(), "\n") {
		require.False(t, strings.HasPrefix(strings.TrimSpace(l), "before "), "nothing happened before the first kill: %s", l)
	}
}
