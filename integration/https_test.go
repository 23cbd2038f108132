package integration

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/transport"
)

// Three controllers serving HTTPS with their node certificates and a token:
// the CLI talks to them with --cacert, a write sent to a follower reaches
// the leader over the QUIC cluster link (never the leader's HTTP port), and
// a plain-HTTP client gets nowhere.
func TestHTTPS_CLIAndForwardingOverTheClusterLink(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	c := newCluster(t, 3, "--api-token-file="+tokenFile)
	var eps []string
	for i := uint64(1); i <= 3; i++ {
		n := c.nodes[i]
		n.extra = append(n.extra, "--http-tls-cert="+filepath.Join(n.tlsDir, transport.NodeFile),
			"--http-tls-key="+filepath.Join(n.tlsDir, transport.NodeKeyFile))
		eps = append(eps, "https://"+n.httpAddr)
	}
	c.startAll()
	ca := "--cacert=" + filepath.Join(c.caDir(), transport.CAFile)
	all := "--endpoints=" + strings.Join(eps, ",")

	caPEM, err := os.ReadFile(filepath.Join(c.caDir(), transport.CAFile))
	require.NoError(t, err)
	cl, err := client.New(client.Config{Endpoints: eps, Token: "s3cret", CACert: caPEM})
	require.NoError(t, err)
	var lead uint64
	require.Eventually(t, func() bool {
		st, err := cl.Cluster(t.Context())
		if err == nil {
			lead = st.LeaderID
		}
		return lead != 0
	}, 30*time.Second, 200*time.Millisecond, "no leader over HTTPS")

	follower := uint64(1)
	if lead == 1 {
		follower = 2
	}
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	peerRequests := func() float64 {
		resp, err := hc.Get("https://" + c.nodes[lead].httpAddr + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "corral_http_peer_requests_total "); ok {
				f, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err)
				return f
			}
		}
		return 0
	}
	before := peerRequests()
	// A leader-only request through the follower is forwarded.
	out, code := runCLI(t, "controller", "list", "--endpoints=https://"+c.nodes[follower].httpAddr, ca, "--token=s3cret")
	require.Zero(t, code, out)
	require.Greater(t, peerRequests(), before, "the follower did not forward over the cluster link")

	out, code = runCLI(t, "kv", "put", all, ca, "--token=s3cret", "k", "v")
	require.Zero(t, code, out)
	out, code = runCLI(t, "kv", "get", "--endpoints=https://"+c.nodes[follower].httpAddr, ca, "--token=s3cret", "k")
	require.Zero(t, code, out)
	require.Contains(t, out, "v")

	// Without the CA the CLI refuses the server, and says what to do.
	out, code = runCLI(t, "kv", "get", all, "--token=s3cret", "k")
	require.NotZero(t, code)
	require.Contains(t, out, "--cacert")
	// Plain HTTP reaches nothing.
	out, code = runCLI(t, "kv", "get", "--endpoints=http://"+c.nodes[follower].httpAddr, "--token=s3cret", "k")
	require.NotZero(t, code, out)
}
