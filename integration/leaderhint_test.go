package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// putsServed counts the puts a controller's API answered. (metricLabeled
// cannot match this route: its value holds a "}".)
func putsServed(t *testing.T, n *node) float64 {
	t.Helper()
	return metricSum(t, n, func(line string) bool {
		return strings.HasPrefix(line, "corral_http_request_duration_seconds_count{") &&
			(strings.Contains(line, `route="PUT /v1/kv/{key...}"`) || strings.Contains(line, `route="STREAM put"`))
	})
}

// A client that lists every controller, starting at a follower, sends its
// calls to the leader after the first answer (the follower names the
// leader in X-Corral-Leader, or in the KV stream's answers), and again
// after the leader is killed.
func TestQuorum_ClientMovesToTheLeader(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	lead := c.waitLeader(30 * time.Second)
	var order []uint64 // followers first
	for id := uint64(1); id <= 3; id++ {
		if id != lead {
			order = append(order, id)
		}
	}
	order = append(order, lead)
	// A new cluster's controllers announce their API addresses through
	// the log just after they start; until the leader's is applied, a
	// follower cannot name it.
	require.Eventually(t, func() bool {
		resp, err := http.Get(c.nodes[order[0]].endpoint() + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.Header.Get(client.LeaderHeader) == c.nodes[lead].httpAddr
	}, 20*time.Second, 20*time.Millisecond, "follower %d never named leader %d", order[0], lead)
	cl := c.client(order...)
	ctx := context.Background()
	for i := range 20 {
		_, err := cl.Put(ctx, fmt.Sprintf("hint/%d", i), []byte("v"))
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, putsServed(t, c.nodes[order[0]]), "the follower served the first put only")
	require.EqualValues(t, 0, putsServed(t, c.nodes[order[1]]))
	require.EqualValues(t, 19, putsServed(t, c.nodes[lead]))

	// Each controller announces its API address through the log after it
	// starts; one still on its way to the leader when the leader dies is
	// lost, and until its controller announces again no follower can
	// name it. So the followers must know every address before the kill.
	for _, id := range order[:2] {
		require.Eventually(t, func() bool { return knowsAPIAddrs(c, c.nodes[id]) }, 20*time.Second, 20*time.Millisecond,
			"controller %d never learnt every controller's API address", id)
	}
	c.kill(lead)
	newLead := c.waitLeader(30*time.Second, order[:2]...)
	before := putsServed(t, c.nodes[newLead])
	for i := range 20 {
		require.Eventually(t, func() bool {
			_, err := cl.Put(ctx, fmt.Sprintf("hint/after/%d", i), []byte("v"))
			return err == nil
		}, 20*time.Second, 50*time.Millisecond)
	}
	// The first put after the kill may land on the other follower, which
	// names the new leader; the rest go to the new leader.
	require.GreaterOrEqual(t, putsServed(t, c.nodes[newLead])-before, float64(19))
}

// knowsAPIAddrs reports whether n lists every controller of c with its
// API address (GET /v1/controllers).
func knowsAPIAddrs(c *cluster, n *node) bool {
	resp, err := http.Get(n.endpoint() + "/v1/controllers")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct {
		Controllers []struct {
			ID          uint64 `json:"id"`
			HTTPAddress string `json:"http_address"`
		} `json:"controllers"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return false
	}
	known := map[uint64]string{}
	for _, ctl := range out.Controllers {
		known[ctl.ID] = ctl.HTTPAddress
	}
	for id, m := range c.nodes {
		if m != nil && known[id] != m.httpAddr {
			return false
		}
	}
	return true
}
