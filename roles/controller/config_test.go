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
