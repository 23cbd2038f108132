package roles

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// reloadLog is a log the nodes write while the test reads it.
type reloadLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *reloadLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *reloadLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor polls the log until it contains what n times.
func (l *reloadLog) waitFor(t *testing.T, what string, n int, errc <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(l.String(), what) < n {
		select {
		case err := <-errc:
			t.Fatalf("the node stopped (%v) before logging %q %d times:\n%s", err, what, n, l.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not logged %d times:\n%s", what, n, l.String())
		}
	}
}

// Every Run function reloads its node's TLS dir each time the
// ReloadTLSOn channel delivers (a combined node: the controller's, then the
// worker's), logging the new serial, and still stops cleanly.
func TestRun_ReloadTLSOn(t *testing.T) {
	for _, mode := range []string{"controller", "worker", "combined"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tlsDir := filepath.Join(dir, "tls")
			role, id := transport.RoleController, "1"
			if mode == "worker" {
				role, id = transport.RoleWorker, "w-1"
			}
			require.NoError(t, transport.CreateCerts(tlsDir, role, id, []string{"127.0.0.1"}))
			var logs reloadLog
			log := slog.New(slog.NewTextHandler(&logs, nil))
			addr := "127.0.0.1:0" // a lone controller; nothing needs to reach it
			ccfg := ControllerConfig{NodeID: 1, DataDir: filepath.Join(dir, "ctrl"), ClusterAddr: addr,
				Peers: map[uint64]string{1: addr}, TLSDir: tlsDir, Logger: log}
			wcfg := WorkerConfig{DataDir: filepath.Join(dir, "worker"), Logger: log}
			reload := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			lines := 1
			go func() {
				switch mode {
				case "controller":
					errc <- RunController(ctx, ccfg, ReloadTLSOn(reload))
				case "worker":
					wcfg.Controllers, wcfg.TLSDir = []string{"127.0.0.1:1"}, tlsDir
					errc <- RunWorker(ctx, wcfg, ReloadTLSOn(reload))
				default:
					errc <- RunCombined(ctx, ccfg, wcfg, ReloadTLSOn(reload))
				}
			}()
			if mode == "combined" {
				lines = 2
			}
			started := "controller started"
			if mode != "controller" {
				started = "worker started"
			}
			logs.waitFor(t, started, 1, errc)

			_, err := transport.IssueCert(tlsDir, role, id, []string{"127.0.0.1"}, tlsDir)
			require.NoError(t, err)
			b, err := transport.LoadTLSDir(tlsDir)
			require.NoError(t, err)
			select {
			case reload <- struct{}{}:
			case err := <-errc:
				t.Fatalf("the node stopped: %v", err)
			}
			logs.waitFor(t, "serial="+transport.SerialHex(b.Cert.Leaf), lines, errc)
			require.Equal(t, lines, strings.Count(logs.String(), `msg="TLS certificate reloaded"`))

			cancel()
			select {
			case err := <-errc:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Fatal("the node did not stop")
			}
		})
	}
}
