package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-zookeeper/zk"

	"github.com/corral-dev/corral/client"
)

// devProcess is a running `corral dev`, its stdout collected line by line.
type devProcess struct {
	cmd      *exec.Cmd
	httpAddr string
	zkAddr   string
	mu       sync.Mutex
	lines    []string
	done     chan struct{} // closed when stdout reached EOF
}

func startDevProcess(t *testing.T, args ...string) *devProcess {
	t.Helper()
	d := &devProcess{httpAddr: freeAddr(t), zkAddr: freeAddr(t), done: make(chan struct{})}
	args = append([]string{"dev", "--http-addr", d.httpAddr, "--cluster-addr", freeAddr(t), "--zk-addr", d.zkAddr, "--log-level", "warn"}, args...)
	d.cmd = exec.Command(corralBin, args...)
	d.cmd.Stderr = os.Stderr
	out, err := d.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, d.cmd.Start())
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			_ = d.cmd.Wait()
		}
	})
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			d.mu.Lock()
			d.lines = append(d.lines, sc.Text())
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *devProcess) stdout() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

func (d *devProcess) client(t *testing.T) *client.Client {
	cl, err := client.New(client.Config{Endpoints: []string{"http://" + d.httpAddr}, Timeout: 5 * time.Second})
	require.NoError(t, err)
	return cl
}

// interrupt sends Ctrl-C's SIGINT and returns the exit code and the whole stdout.
func (d *devProcess) interrupt(t *testing.T) (int, string) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("corral dev did not exit within 30s of SIGINT; stdout:\n%s", d.stdout())
	}
	err := d.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, d.stdout()
}

// TestDevRunsJobs: `corral dev --workers 2` runs the README's job at once, shows its build, stops with exit 0
// and a goodbye on Ctrl-C, and keeps a --data-dir for the next run.
func TestDevRunsJobs(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "dev")
	d := startDevProcess(t, "--workers", "2", "--data-dir", dataDir)
	cl := d.client(t)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		list, err := cl.Workers(ctx, "alive")
		return err == nil && len(list.Workers) == 2
	}, 30*time.Second, 50*time.Millisecond, "the dev workers never registered; stdout:\n%s", d.stdout())
	require.Contains(t, d.stdout(), "a one-node cluster with 2 worker(s) is running")

	spec := `{"name": "hello", "count": 2,
 "task": {"command": "/bin/sh", "args": ["-c", "while true; do echo hello from $CORRAL_ALLOC_ID; sleep 1; done"]}}`
	_, _, err := cl.SubmitJob(ctx, []byte(spec))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		allocs, err := cl.FilterAllocations(ctx, client.AllocFilter{Job: "hello", State: "running"})
		return err == nil && len(allocs) == 2
	}, 30*time.Second, 50*time.Millisecond, "the README's job never ran on the dev workers")
	_, err = cl.Put(ctx, "kept", []byte("yes"))
	require.NoError(t, err)

	// The build shows in GET /v1/cluster and in /metrics.
	resp, err := http.Get("http://" + d.httpAddr + "/v1/cluster")
	require.NoError(t, err)
	var info struct {
		Build struct {
			Version   string `json:"version"`
			GoVersion string `json:"go_version"`
		} `json:"build"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	resp.Body.Close()
	require.Equal(t, "dev", info.Build.Version)
	require.True(t, strings.HasPrefix(info.Build.GoVersion, "go"), info.Build.GoVersion)
	resp, err = http.Get("http://" + d.httpAddr + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(metrics), `corral_build_info{commit=`)

	// The ZooKeeper port serves a real ZooKeeper client, and its znodes
	// are kept with the data dir too.
	require.Contains(t, d.stdout(), "ZooKeeper:  "+d.zkAddr)
	zc := zkConnect(t, []string{d.zkAddr}, 6*time.Second)
	_, err = zc.Create("/dev-kept", []byte("zk"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	zc.Close()

	code, out := d.interrupt(t)
	require.Equal(t, 0, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, "corral dev: stopped (data kept in "+dataDir+"). Bye.", lines[len(lines)-1])

	// The next run continues from the kept data dir.
	d = startDevProcess(t, "--workers", "1", "--data-dir", dataDir)
	cl = d.client(t)
	require.Eventually(t, func() bool {
		kv, err := cl.Get(ctx, "kept")
		return err == nil && string(kv.Value) == "yes"
	}, 30*time.Second, 50*time.Millisecond, "the kept data dir lost its keys")
	zc = zkConnect(t, []string{d.zkAddr}, 6*time.Second)
	data, _, err := zc.Get("/dev-kept")
	require.NoError(t, err)
	require.Equal(t, "zk", string(data))
	zc.Close()
	code, out = d.interrupt(t)
	require.Equal(t, 0, code, out)
}

// TestDevRemovesItsTemporaryDataDir: without --data-dir, the data lives in a temporary dir removed on exit.
func TestDevRemovesItsTemporaryDataDir(t *testing.T) {
	d := startDevProcess(t, "--workers", "0")
	var dir string
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(d.stdout(), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "data dir:"); ok {
				dir, _, _ = strings.Cut(strings.TrimSpace(rest), " ")
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "corral dev never printed its data dir")
	require.DirExists(t, dir)
	require.Contains(t, d.stdout(), "no workers: start with --workers 1")
	code, out := d.interrupt(t)
	require.Equal(t, 0, code, out)
	require.True(t, strings.HasSuffix(strings.TrimSpace(out), "corral dev: stopped (data removed). Bye."), out)
	_, err := os.Stat(dir)
	require.True(t, os.IsNotExist(err), "temporary data dir %s still exists after exit", dir)
}

// TestDevStopsCleanlyOnAnInterruptWhileStarting: a Ctrl-C while corral dev starts (here: as soon as its
// certificates exist, before its controller is up) stops it as usual, exit 0 and a goodbye, rather than the
// signal's default action killing it (the handler used to be taken only after the hints were printed).
func TestDevStopsCleanlyOnAnInterruptWhileStarting(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "dev")
	d := startDevProcess(t, "--workers", "0", "--data-dir", dataDir)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dataDir, "tls", "node.pem"))
		return err == nil
	}, 30*time.Second, time.Millisecond, "corral dev never wrote its certificates")
	code, out := d.interrupt(t)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "corral dev: stopped (data kept in "+dataDir+"). Bye.")
}

// TestDevDataDirInUse: a second node on a data dir in use fails at once, naming the process that holds it, in
// one message (not "open raft log X: open raft log X: ...").
func TestDevDataDirInUse(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "dev")
	d := startDevProcess(t, "--workers", "0", "--data-dir", dataDir)
	cl := d.client(t)
	require.Eventually(t, func() bool {
		_, err := cl.Put(context.Background(), "ready", []byte("1"))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "corral dev never took a write")

	out, code := runCLI(t, "dev", "--workers", "0", "--data-dir", dataDir, "--http-addr", freeAddr(t), "--cluster-addr", freeAddr(t), "--zk-addr", freeAddr(t))
	require.Equal(t, 1, code, out)
	want := fmt.Sprintf("corral: start dev controller: data dir %s: in use by another process (pid %d); "+
		"stop that process first, or give this node another --data-dir\n", dataDir, d.cmd.Process.Pid)
	require.True(t, strings.HasSuffix(out, want), "got:\n%s\nwant the last line:\n%s", out, want)
	require.Equal(t, 1, strings.Count(out, dataDir), "the data dir is named once: %s", out)

	code, out = d.interrupt(t)
	require.Equal(t, 0, code, out)
}
