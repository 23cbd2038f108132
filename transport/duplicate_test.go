package transport

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDuplicates_TwoAddressesForOneNodeWarnOnce(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	q := &QUIC{log: slog.New(slog.NewTextHandler(&logs, nil))}

	done1 := q.trackRaftPeer(2, "10.0.0.2:7002")
	again := q.trackRaftPeer(2, "10.0.0.2:7002") // a reconnect from the same process
	other := q.trackRaftPeer(3, "10.0.0.3:7003")
	require.Empty(t, logs.String(), "one address per node is normal")

	dup := q.trackRaftPeer(2, "10.0.0.9:7002")
	require.Equal(t, 1, strings.Count(logs.String(), "two processes speak as one controller"), logs.String())
	require.Contains(t, logs.String(), "node=2")
	require.Contains(t, logs.String(), "10.0.0.9:7002")
	q.trackRaftPeer(2, "10.0.0.9:7002")()
	require.Equal(t, 1, strings.Count(logs.String(), "two processes"), "warned at most once a minute")

	dup()
	done1()
	again()
	other()
	require.Empty(t, q.dups.live, "every connection forgotten once closed")
}
