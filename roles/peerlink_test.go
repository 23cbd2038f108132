package roles

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
)

// Requests one controller makes of another (a follower forwarding a write
// to the leader, relaying workers and logs, the dashboard's peer views)
// travel over the cluster link, not the peers' public HTTP addresses: the
// caller's token never crosses the network in clear. The in-memory network
// stands for the QUIC link here; the QUIC side is tested in transport and
// across processes in integration.
func TestPeerRequestsTravelOverTheClusterLink(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	wc := testcluster.New(t, 3, func(cfg *controller.Config) {
		cfg.HTTPAddr, cfg.APITokenFile = "127.0.0.1:0", tokenFile
	})
	lead := wc.Leader()
	follower := wc.Node(wc.Others(lead.NodeID())[0])
	peerRequests := func() float64 {
		return testcluster.Metric(t, lead.Registry(), "corral_http_peer_requests_total")
	}
	before := peerRequests()

	do := func(method, path, body, token string) (int, string) {
		req, err := http.NewRequest(method, "http://"+follower.HTTPAddr()+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	// Leader-only: listing controllers is forwarded.
	code, body := do("GET", "/v1/controllers", "", "s3cret")
	require.Equal(t, http.StatusOK, code, body)
	var ctrls struct {
		LeaderID uint64 `json:"leader_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ctrls))
	require.Equal(t, lead.NodeID(), ctrls.LeaderID, "the answer came from the leader")
	require.Greater(t, peerRequests(), before, "the forwarded request did not reach the leader over the cluster link")

	// The follower checks the token itself, before forwarding anything.
	mid := peerRequests()
	code, _ = do("GET", "/v1/controllers", "", "wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, mid, peerRequests(), "a request with a wrong token was forwarded")

	// The dashboard's peer views (the SSE summaries) ask every other
	// controller over the link.
	require.Eventually(t, func() bool {
		req, err := http.NewRequest("GET", "http://"+follower.HTTPAddr()+"/v1/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var sum struct {
				Peers []struct {
					ID    uint64 `json:"id"`
					Up    bool   `json:"up"`
					Error string `json:"error"`
				} `json:"peers"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &sum))
			up := 0
			for _, p := range sum.Peers {
				if p.Up {
					up++
				}
			}
			return up == 3
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the dashboard could not reach its peers over the cluster link")
}
