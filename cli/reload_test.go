package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// Only SIGHUP asks for a reload, and a burst of them while one is pending
// asks for one.
func TestForwardHangups(t *testing.T) {
	t.Parallel()
	// Unbuffered: a send returns once the forwarder has taken the signal,
	// so once the next send returns, the previous signal has been handled.
	sigs := make(chan os.Signal)
	reload := make(chan struct{}, 1)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		forwardHangups(quit, sigs, reload)
	}()
	send := func(s os.Signal) {
		t.Helper()
		select {
		case sigs <- s:
		case <-time.After(10 * time.Second):
			t.Fatalf("the forwarder did not take %v", s)
		}
	}

	send(os.Interrupt)
	send(syscall.SIGTERM)
	send(syscall.SIGUSR1)
	require.Empty(t, reload, "only SIGHUP reloads")

	send(syscall.SIGHUP)
	send(os.Interrupt) // taken only once the SIGHUP was handled
	require.Len(t, reload, 1)
	<-reload

	for range 3 {
		send(syscall.SIGHUP)
	}
	send(os.Interrupt)
	require.Len(t, reload, 1, "a pending reload covers the later hangups")
	<-reload

	close(quit)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the forwarder did not stop")
	}
}

// `corral run --role controller` reloads its TLS dir on SIGHUP: it logs
// the new certificate's serial, keeps running, and still stops cleanly.
func TestRunReloadsTLSDirOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a controller")
	}
	// Keep SIGHUP caught for the whole test: a hangup that found no node
	// listening must not end the test binary.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)

	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	hosts := []string{"127.0.0.1"}
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", hosts))
	app := App()
	var logs syncBuffer
	app.Writer, app.ErrWriter = io.Discard, &logs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- app.RunContext(ctx, []string{"corral", "run", "--role=controller", "--node-id=1",
			"--data-dir=" + filepath.Join(dir, "data"), "--http-addr=127.0.0.1:0", "--controllers=1@127.0.0.1:0",
			"--tls-dir=" + tlsDir})
	}()
	waitLog := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for strings.Count(logs.String(), what) < n {
			select {
			case err := <-errc:
				t.Fatalf("corral run ended (%v) before logging %q:\n%s", err, what, logs.String())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", what, logs.String())
			}
		}
	}
	waitLog("controller started", 1)

	// Rotate: a new pair for the same identity, then SIGHUP.
	_, err := transport.IssueCert(tlsDir, transport.RoleController, "1", hosts, tlsDir)
	require.NoError(t, err)
	b, err := transport.LoadTLSDir(tlsDir)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitLog("serial="+transport.SerialHex(b.Cert.Leaf), 1)
	require.Contains(t, logs.String(), `msg="TLS certificate reloaded"`)

	// A refused reload (a worker's certificate) is logged; the node runs on.
	_, err = transport.IssueCert(tlsDir, transport.RoleWorker, "w-1", hosts, tlsDir)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitLog("TLS reload failed; keeping the current certificate", 1)
	require.Contains(t, logs.String(), "a node's identity cannot change while it runs")

	cancel()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("corral run did not stop")
	}
	require.Contains(t, logs.String(), "controller stopped")
}
