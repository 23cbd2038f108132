package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets hopRun start this test binary as its echo server.
func TestMain(m *testing.M) {
	if mode := os.Getenv(hopServeEnv); mode != "" {
		if err := hopServe(mode); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestHopRunsBothTransports(t *testing.T) {
	for _, mode := range []string{"tcp", "quic"} {
		r, err := hopRun(mode, 50, 300, 0)
		require.NoError(t, err, mode)
		require.Equal(t, mode, r.mode)
		require.Positive(t, r.p50, mode)
		require.GreaterOrEqual(t, r.p99, r.p50, mode)
		require.Positive(t, r.serverCPU, "%s: the server's usage was read", mode)
	}
	_, err := hopRun("carrier-pigeon", 50, 300, time.Millisecond)
	require.Error(t, err)
}

func TestHopRefusesOutOfRange(t *testing.T) {
	for _, args := range [][]string{{"-n", "5"}, {"-rounds", "0"}, {"-gap", "2s"}, {"-bytes", "70000"}} {
		require.Error(t, runHop(args), "%v", args)
	}
}
