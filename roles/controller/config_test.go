package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// A session timeout a leader failover does not fit in is refused at
// start, with values that would work.
func TestConfig_RefusesASessionTimeoutAFailoverDoesNotFit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		timeout time.Duration
		tick    time.Duration
		want    string // "" = accepted
	}{
		{name: "defaults", timeout: 0, tick: 0},
		{name: "the minimum for 0.7 s elections", timeout: 3 * time.Second, tick: 100 * time.Millisecond},
		{name: "too short for 0.7 s elections", timeout: 2 * time.Second, tick: 100 * time.Millisecond,
			want: "--session-timeout 2s is too short for an election timeout of 700ms (7 ticks of --tick-interval 100ms): " +
				"workers would fence themselves while a new leader is elected. Use --session-timeout 3s or more"},
		{name: "short elections allow a short timeout", timeout: time.Second, tick: 20 * time.Millisecond},
		{name: "slow ticks need a longer timeout", timeout: transport.DefaultSessionTimeout, tick: 400 * time.Millisecond,
			want: "Use --session-timeout 11.4s or more (28s, ten election timeouts, also leaves room for a split vote)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{NodeID: 1, DataDir: t.TempDir(), Peers: map[uint64]string{1: "mem:1"}, TLSDir: "tls",
				SessionTimeout: tc.timeout, TickInterval: tc.tick}
			cfg.Defaults()
			err := cfg.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The liveness link takes the cluster port's number on TCP: a TCP listener
// of the controller's own on it is refused at start, not left to fail.
func TestConfig_RefusesATCPListenerOnTheClusterPort(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		http, zk, metrs string
		want            string // "" = accepted
	}{
		{name: "other ports", http: "127.0.0.1:8080", zk: "127.0.0.1:2181", metrs: "127.0.0.1:9090"},
		{name: "the cluster port on another address", http: "127.0.0.2:7001"},
		{name: "the API on the cluster port", http: "127.0.0.1:7001",
			want: "--http-addr 127.0.0.1:7001 uses TCP port 7001, which --cluster-addr 127.0.0.1:7001 takes on TCP too"},
		{name: "the ZooKeeper port on every address", http: "127.0.0.1:8080", zk: ":7001", want: "give --zk-addr another port"},
		{name: "metrics on the cluster port", http: "127.0.0.1:8080", metrs: "0.0.0.0:7001", want: "--metrics-addr 0.0.0.0:7001 uses TCP port 7001"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{NodeID: 1, DataDir: t.TempDir(), Peers: map[uint64]string{1: "127.0.0.1:7001"}, TLSDir: "tls",
				HTTPAddr: tc.http, MetricsAddr: tc.metrs}
			cfg.ZK.Addr = tc.zk
			cfg.Defaults()
			err := cfg.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
