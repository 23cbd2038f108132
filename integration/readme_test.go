package integration

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeBlock returns the first ```sh block of README.md after the first
// line that contains marker.
func readmeBlock(t *testing.T, readme, marker string) string {
	t.Helper()
	i := strings.Index(readme, marker)
	require.GreaterOrEqual(t, i, 0, "README.md no longer has %q: update TestREADME_RunsAsWritten", marker)
	rest := readme[i:]
	start := strings.Index(rest, "```sh\n")
	require.GreaterOrEqual(t, start, 0, "no sh block after %q", marker)
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "```")
	require.GreaterOrEqual(t, end, 0)
	return rest[:end]
}

// runBash runs script with bash -euo pipefail in dir, failing the test
// with its output unless it exits 0.
func runBash(t *testing.T, dir, what, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "E=") // "With make run instead, drop $E"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, err, "the README's %s failed as written:\n--- script ---\n%s\n--- output ---\n%s", what, script, out.String())
	return out.String()
}

// TestREADME_RunsAsWritten runs the README's quick tour, its job example
// and its coordination examples, taken from README.md itself, against
// 'corral dev' (what 'make run' starts), so the README cannot drift from
// the code. Where a reader would wait or press Ctrl-C, the test does: it
// waits for the job's allocations to run before reading their logs, and
// stops 'corral watch' (which follows forever) after two seconds.
func TestREADME_RunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts corral dev on 127.0.0.1:8080, as the README does")
	}
	src, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(src)
	ln, err := net.Listen("tcp", "127.0.0.1:8080")
	require.NoError(t, err, "the README's commands talk to 127.0.0.1:8080, which is in use: stop what listens there")
	ln.Close()

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(corralBin, filepath.Join(dir, "bin", "corral")))
	var devOut bytes.Buffer
	dev := exec.Command(corralBin, "dev", "--data-dir", filepath.Join(dir, "dev"))
	dev.Dir = dir
	dev.Stdout, dev.Stderr = &devOut, &devOut
	require.NoError(t, dev.Start())
	t.Cleanup(func() {
		_ = dev.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = dev.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = dev.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("corral dev output:\n%s", devOut.String())
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://127.0.0.1:8080/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "corral dev never became ready:\n%s", &devOut)

	out := runBash(t, dir, "quick tour", readmeBlock(t, readme, "With `make run` going"))
	require.Contains(t, out, "postgres://db:5432")
	require.Contains(t, out, "corral_raft")

	// The kazoo example, against corral dev's ZooKeeper port as written.
	i := strings.Index(readme, "### Or keep your ZooKeeper client")
	require.GreaterOrEqual(t, i, 0, "README.md no longer has its ZooKeeper client example: update TestREADME_RunsAsWritten")
	py := readme[i:]
	py = py[strings.Index(py, "```python\n")+len("```python\n"):]
	py = py[:strings.Index(py, "```")]
	zkOut, err := exec.Command(needKazoo(t), "-c", py).CombinedOutput()
	require.NoError(t, err, "the README's kazoo example failed as written:\n%s\n--- output ---\n%s", py, zkOut)
	require.Contains(t, string(zkOut), "['m1']")

	// The job example, in two parts: a reader waits for the allocations to
	// run before reading their logs.
	job := readmeBlock(t, readme, "run a job\n(JSON or YAML")
	cut := strings.Index(job, "ID=$(")
	require.Greater(t, cut, 0, "the job example no longer finds an allocation id with ID=$(...)")
	runBash(t, dir, "job example (submit)", job[:cut])
	require.Eventually(t, func() bool {
		out, _ := exec.Command(corralBin, "alloc", "list", "--job", "hello", "--state", "running").CombinedOutput()
		return strings.Count(string(out), "\n") >= 3 // a header and both allocations
	}, 60*time.Second, 200*time.Millisecond, "the README's job never ran both allocations")
	out = runBash(t, dir, "job example (logs, stop)", job[cut:])
	require.Contains(t, out, "hello from")

	// Coordination: the commands it runs under a lock or as leader exist.
	for name, body := range map[string]string{
		"report.sh":   "#!/bin/sh\necho \"report under fencing token $CORRAL_FENCING_TOKEN\"\n",
		"coordinator": "#!/bin/sh\necho coordinating\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	coord := readmeBlock(t, readme, "## Coordination instead of ZooKeeper")
	var lines []string
	for _, l := range strings.Split(coord, "\n") {
		if strings.HasPrefix(l, "bin/corral watch ") {
			cmd, _, _ := strings.Cut(l, " #")             // the command, without its comment
			l = "timeout 2 " + cmd + " || [ $? -eq 124 ]" // follows forever: a reader presses Ctrl-C
		}
		lines = append(lines, l)
	}
	out = runBash(t, dir, "coordination examples", strings.Join(lines, "\n"))
	require.Contains(t, out, "report under fencing token")
	require.Contains(t, out, "coordinating")
	require.Contains(t, out, "m1")
}

// TestREADME_ClusterAsWritten runs the README's three-controller cluster,
// its quorum operations, its worker and its job example on the ports the
// README names, with its /tmp paths moved into the test's directory. A
// reader starts the worker again after the README's kill -9; so does the
// test, with the README's own command line.
func TestREADME_ClusterAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the README's cluster on its fixed ports")
	}
	src, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(src)
	for _, p := range []string{"8081", "8082", "8083", "9101"} {
		ln, err := net.Listen("tcp", "127.0.0.1:"+p)
		require.NoError(t, err, "the README's cluster uses 127.0.0.1:%s, which is in use", p)
		ln.Close()
	}
	for _, p := range []string{"7001", "7002", "7003"} {
		pc, err := net.ListenPacket("udp", "127.0.0.1:"+p)
		require.NoError(t, err, "the README's cluster uses udp 127.0.0.1:%s, which is in use", p)
		pc.Close()
	}
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	require.NoError(t, os.Symlink(corralBin, filepath.Join(dir, "bin", "corral")))
	moved := func(s string) string { return strings.ReplaceAll(s, "/tmp/", tmp+"/") }

	var pgids []int
	t.Cleanup(func() {
		for _, g := range pgids {
			_ = syscall.Kill(-g, syscall.SIGKILL)
		}
		if t.Failed() {
			for _, f := range []string{"c1.log", "c2.log", "c3.log", "w1.log"} {
				if b, err := os.ReadFile(filepath.Join(tmp, f)); err == nil {
					t.Logf("--- %s (last 3000 bytes) ---\n%s", f, tail(string(b), 3000))
				}
			}
		}
	})
	env := []string{}
	run := func(what, script string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		// Its background processes (controllers, the worker) live on in
		// this process group until the cleanup kills it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.WaitDelay = 5 * time.Second // a background child may hold the output open
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		pgids = append(pgids, cmd.Process.Pid)
		err := cmd.Wait()
		if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			require.NoError(t, err, "the README's %s failed as written:\n--- script ---\n%s\n--- output ---\n%s", what, script, out.String())
		}
		return out.String()
	}

	out := run("three-controller cluster", moved(readmeBlock(t, readme, "A real three-controller cluster:")))
	require.Contains(t, out, "leader")
	quorum := moved(readmeBlock(t, readme, "Operate the quorum:"))
	for _, l := range strings.Split(quorum, "\n") {
		if strings.HasPrefix(l, "E=") {
			env = append(env, strings.Fields(l)[0]) // the blocks below use $E
		}
	}
	require.NotEmpty(t, env, "the quorum block no longer sets E")
	run("quorum operations", quorum)

	workers := moved(readmeBlock(t, readme, "With the\ncluster above:"))
	out = run("worker", workers)
	// The block waits for the worker's readyz before listing: the list
	// must show it, as a reader would see it.
	require.Regexp(t, `w-1\s+alive`, out, "the README's worker list did not show w-1 alive")
	// Start it again, as the README says, with its own command line.
	i := strings.Index(workers, "bin/corral run --role=worker")
	require.GreaterOrEqual(t, i, 0, "the worker block no longer starts a worker")
	var cmdLine []string
	for _, l := range strings.Split(workers[i:], "\n") {
		l, _, _ = strings.Cut(l, " #")
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), "&"))
		cmdLine = append(cmdLine, strings.TrimSuffix(l, "\\"))
		if !strings.HasSuffix(l, "\\") {
			break
		}
	}
	run("worker restart", strings.Join(cmdLine, " ")+" >"+filepath.Join(tmp, "w1.log")+" 2>&1 &")
	ep := strings.TrimPrefix(env[0], "E=")
	require.Eventually(t, func() bool {
		out, _ := exec.Command(corralBin, "worker", "list", ep).CombinedOutput()
		return strings.Contains(string(out), "w-1") && strings.Contains(string(out), "alive")
	}, 60*time.Second, 200*time.Millisecond, "the README's worker never came back alive")

	job := readmeBlock(t, readme, "run a job\n(JSON or YAML")
	cut := strings.Index(job, "ID=$(")
	run("job example on the cluster (submit)", job[:cut])
	require.Eventually(t, func() bool {
		out, _ := exec.Command(corralBin, "alloc", "list", ep, "--job", "hello", "--state", "running").CombinedOutput()
		return strings.Count(string(out), "\n") >= 3
	}, 60*time.Second, 200*time.Millisecond, "the README's job never ran both allocations on the cluster")
	out = run("job example on the cluster (logs, stop)", job[cut:])
	require.Contains(t, out, "hello from")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
