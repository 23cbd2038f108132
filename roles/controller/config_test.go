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
		{name: "the minimum for 1 s elections", timeout: 4200 * time.Millisecond, tick: 100 * time.Millisecond},
		{name: "too short for 1 s elections", timeout: 3 * time.Second, tick: 100 * time.Millisecond,
			want: "--session-timeout 3s is too short for an election timeout of 1s (10 ticks of --tick-interval 100ms): " +
				"workers would fence themselves while a new leader is elected. Use --session-timeout 4.2s or more"},
		{name: "short elections allow a short timeout", timeout: time.Second, tick: 20 * time.Millisecond},
		{name: "slow ticks need a longer timeout", timeout: transport.DefaultSessionTimeout, tick: 300 * time.Millisecond,
			want: "Use --session-timeout 12.2s or more (30s, ten election timeouts, also leaves room for a split vote)"},
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
