package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// A worker's dialer turns QUIC's keep-alive pings off (NewDialer), so a
// standby lives only as long as its own pings come well within the
// connection's idle timeout, whatever the leader's session timeout.
func TestStandbyPingEvery_StaysWithinTheIdleTimeout(t *testing.T) {
	for _, tc := range []struct{ timeout, want time.Duration }{
		{0, transport.DefaultSessionTimeout / 2},
		{10 * time.Second, 5 * time.Second},
		{3 * time.Second, 1500 * time.Millisecond},
		{60 * time.Second, transport.MaxIdleTimeout / 3},
	} {
		w := &Worker{timeout: tc.timeout}
		require.Equal(t, tc.want, w.standbyPingEvery(), "session timeout %s", tc.timeout)
		require.LessOrEqual(t, 3*w.standbyPingEvery(), transport.MaxIdleTimeout)
	}
}

// A lost standby is dialed again within [T/2, 2T]: late enough that the
// workers of a restarted controller do not all dial it in the second it
// comes back, soon enough that it holds their standbys before it may lead.
func TestStandbyRedialAfter_WithinHalfToTwoSessionTimeouts(t *testing.T) {
	w := &Worker{timeout: 10 * time.Second}
	for range 1000 {
		d := w.standbyRedialAfter(false)
		require.GreaterOrEqual(t, d, 5*time.Second)
		require.LessOrEqual(t, d, 20*time.Second)
		first := w.standbyRedialAfter(true)
		require.GreaterOrEqual(t, first, time.Duration(0))
		require.LessOrEqual(t, first, 10*time.Second)
	}
}
