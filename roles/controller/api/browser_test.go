package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// listening is a fixture whose API serves on a loopback port, where the
// browser checks apply (they do not to Handler() served directly).
func listening(t *testing.T, setup ...func(*fixture)) (*fixture, string) {
	t.Helper()
	f := newFixture(t, setup...)
	require.NoError(t, f.srv.Listen())
	t.Cleanup(func() { _ = f.srv.Shutdown(context.Background()) })
	return f, f.srv.Addr()
}

// call sends one request to addr (a host:port) with the given Host (""
// keeps addr) and header pairs, and returns the status and body.
func call(t *testing.T, hc *http.Client, scheme, addr, host, method, path, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, scheme+"://"+addr+path, strings.NewReader(body))
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// refusedWith checks a refusal: its status, a JSON body in the API's
// error format with code, and an error message.
func refusedWith(t *testing.T, status int, code string, gotStatus int, body string) {
	t.Helper()
	require.Equal(t, status, gotStatus, body)
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, code, e.Code, body)
	require.NotEmpty(t, e.Error, body)
}

func refusals(f *fixture, reason string) float64 {
	return testutil.ToFloat64(f.srv.browser.refused.WithLabelValues(reason))
}

// keyAbsent checks that key was never written.
func keyAbsent(t *testing.T, f *fixture, key string) {
	t.Helper()
	requireAnswer(t, f.do("GET", "/v1/kv/"+key, ""), http.StatusNotFound, "not_found")
}

func TestBrowserHostAllowList(t *testing.T) {
	t.Parallel()
	f, addr := listening(t)
	_, port, _ := net.SplitHostPort(addr)
	ok := []string{"", "localhost:" + port, "LOCALHOST.:" + port, "127.0.0.1:" + port, "[::1]:" + port, "localhost"}
	for _, h := range ok {
		code, body := call(t, nil, "http", addr, h, "GET", "/v1/cluster", "")
		require.Equal(t, http.StatusOK, code, "Host %q: %s", h, body)
	}
	for _, h := range []string{"evil.example:" + port, "evil.example", "127.0.0.2:" + port, "localhost.evil.example"} {
		code, body := call(t, nil, "http", addr, h, "GET", "/v1/cluster", "")
		refusedWith(t, http.StatusMisdirectedRequest, "host_not_allowed", code, body)
		require.Contains(t, body, "--http-allowed-hosts")
	}
	// A write with a foreign Host is refused even with every header a
	// client sends, and changes nothing.
	code, body := call(t, nil, "http", addr, "rebind.example:"+port, "PUT", "/v1/kv/app/x", "v",
		ClientHeader, "test", "Content-Type", "application/json")
	refusedWith(t, http.StatusMisdirectedRequest, "host_not_allowed", code, body)
	keyAbsent(t, f, "app/x")
	require.EqualValues(t, 5, refusals(f, refusedHost))

	// Probes and metrics answer whatever the Host.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		code, body := call(t, nil, "http", addr, "10.1.2.3:"+port, "GET", p, "")
		require.NotEqual(t, http.StatusMisdirectedRequest, code, "%s: %s", p, body)
		require.Less(t, code, 500, "%s: %s", p, body)
	}
	code, _ = call(t, nil, "http", addr, "10.1.2.3:"+port, "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, code)
}

func TestBrowserAllowedHostsConfig(t *testing.T) {
	t.Parallel()
	_, addr := listening(t, func(f *fixture) { f.cfg.AllowedHosts = []string{"Corral.Example", "10.0.0.7"} })
	_, port, _ := net.SplitHostPort(addr)
	for _, h := range []string{"corral.example:" + port, "10.0.0.7:" + port} {
		code, body := call(t, nil, "http", addr, h, "GET", "/v1/cluster", "")
		require.Equal(t, http.StatusOK, code, "Host %q: %s", h, body)
	}
	// The list replaces the default.
	code, body := call(t, nil, "http", addr, "localhost:"+port, "GET", "/v1/cluster", "")
	refusedWith(t, http.StatusMisdirectedRequest, "host_not_allowed", code, body)

	_, addr = listening(t, func(f *fixture) { f.cfg.AllowedHosts = []string{"*"} })
	code, body = call(t, nil, "http", addr, "anything.example", "GET", "/v1/cluster", "")
	require.Equal(t, http.StatusOK, code, body)
}

func TestDefaultAllowedHosts(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"localhost", "127.0.0.1", "::1", "10.0.0.5"}, DefaultAllowedHosts("10.0.0.5:8080"))
	require.Equal(t, []string{"localhost", "127.0.0.1", "::1", "corral.internal"}, DefaultAllowedHosts("corral.internal:8080"))
	all := DefaultAllowedHosts("0.0.0.0:8080")
	require.Contains(t, all, "127.0.0.1")
	require.NotContains(t, all, "0.0.0.0", "an unspecified address is not a Host; the interfaces' addresses are")
}

// selfSigned is a certificate for names (DNS names or IPs) and its key.
func selfSigned(t *testing.T, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestBrowserHostsFromCertificate(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t, "api.corral.example", "10.9.8.7")
	_, addr := listening(t, func(f *fixture) {
		f.cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }}
	})
	_, port, _ := net.SplitHostPort(addr)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test checks Host, not the chain
	for _, h := range []string{"api.corral.example:" + port, "10.9.8.7:" + port, "localhost:" + port} {
		code, body := call(t, hc, "https", addr, h, "GET", "/v1/cluster", "")
		require.Equal(t, http.StatusOK, code, "Host %q: %s", h, body)
	}
	code, body := call(t, hc, "https", addr, "other.corral.example:"+port, "GET", "/v1/cluster", "")
	refusedWith(t, http.StatusMisdirectedRequest, "host_not_allowed", code, body)
	// Over HTTPS the own origin is https://.
	code, body = call(t, hc, "https", addr, "", "GET", "/v1/cluster", "", "Origin", "https://"+addr)
	require.Equal(t, http.StatusOK, code, body)
	code, body = call(t, hc, "https", addr, "", "GET", "/v1/cluster", "", "Origin", "http://"+addr)
	refusedWith(t, http.StatusForbidden, "origin_not_allowed", code, body)
}

func TestBrowserOrigin(t *testing.T) {
	t.Parallel()
	f, addr := listening(t)
	_, port, _ := net.SplitHostPort(addr)
	// Same origin (as the dashboard sends it on writes) passes.
	for _, o := range []string{"http://" + addr, "HTTP://" + addr} {
		code, body := call(t, nil, "http", addr, "", "POST", "/v1/leases", `{"ttl": "10s"}`,
			"Origin", o, "Content-Type", "application/json")
		require.Equal(t, http.StatusOK, code, "Origin %q: %s", o, body)
	}
	code, body := call(t, nil, "http", addr, "localhost:"+port, "GET", "/v1/cluster", "", "Origin", "http://localhost:"+port)
	require.Equal(t, http.StatusOK, code, body)
	// Foreign origins are refused, whatever the method and headers.
	foreign := []string{"http://evil.example", "http://127.0.0.1:1", "https://" + addr, "null", "http://localhost:" + port, "%zz"}
	for _, o := range foreign {
		code, body := call(t, nil, "http", addr, "", "PUT", "/v1/kv/app/o", "v", "Origin", o, ClientHeader, "test")
		refusedWith(t, http.StatusForbidden, "origin_not_allowed", code, body)
		code, body = call(t, nil, "http", addr, "", "GET", "/v1/kv/app/o", "", "Origin", o)
		refusedWith(t, http.StatusForbidden, "origin_not_allowed", code, body)
	}
	keyAbsent(t, f, "app/o")
	require.EqualValues(t, 2*len(foreign), refusals(f, refusedOrigin))
	// Probes and metrics ignore it.
	code, _ = call(t, nil, "http", addr, "", "GET", "/healthz", "", "Origin", "http://evil.example")
	require.Equal(t, http.StatusOK, code)
}

// stateChanging is every route that changes state, with a body that
// would be valid where the route reads one, and whether that body is JSON.
var stateChanging = []struct {
	method, path, body string
	json               bool
}{
	{"GET", "/v1/kvstream", "", false}, // a GET that writes (kvstream.go)
	{"PUT", "/v1/kv/app/k", "raw value", false},
	{"DELETE", "/v1/kv/app/k", "", true},
	{"POST", "/v1/controllers", `{"id": 9, "address": "127.0.0.1:1"}`, true},
	{"DELETE", "/v1/controllers/9", "", true},
	{"POST", "/v1/controllers/9/transfer-leader", "", true},
	{"POST", "/v1/leases", `{"ttl": "10s"}`, true},
	{"POST", "/v1/leases/keepalive", `{"ids": [1]}`, true},
	{"POST", "/v1/leases/keepalive/stream", "[1]\n", false},
	{"POST", "/v1/leases/1/keepalive", "", true},
	{"DELETE", "/v1/leases/1", "", true},
	{"POST", "/v1/locks/l?lease=1", "", true},
	{"DELETE", "/v1/locks/l?lease=1", "", true},
	{"POST", "/v1/elections/e/campaign?lease=1", "", true},
	{"POST", "/v1/elections/e/resign?lease=1", "", true},
	{"PUT", "/v1/services/s/i?lease=1", `{"address": "10.0.0.1:1"}`, true},
	{"DELETE", "/v1/services/s/i", "", true},
	{"POST", "/v1/jobs", `{"name": "web", "task": {"command": "id"}}`, true},
	{"DELETE", "/v1/jobs/web", "", true},
	{"POST", "/v1/allocations/a1/restart", "", true},
	{"POST", "/v1/workers/w1/drain", `{"drain": true}`, true},
	{"POST", "/v1/certs/revoke", `{"serial": "01"}`, true},
	{"POST", "/v1/tokens", `{"role": "worker"}`, true},
	{"DELETE", "/v1/tokens/t1", "", true},
	{"PATCH", "/v1/kv/app/k", "", true}, // no such route: refused all the same
}

func TestBrowserClientHeader(t *testing.T) {
	t.Parallel()
	f, addr := listening(t)
	refused := 0
	for _, rt := range stateChanging {
		what := rt.method + " " + rt.path
		// What a page can send cross-origin without a preflight: no
		// Content-Type, text/plain, a form.
		for _, ct := range []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
			hdr := []string{}
			if ct != "" {
				hdr = append(hdr, "Content-Type", ct)
			}
			code, body := call(t, nil, "http", addr, "", rt.method, rt.path, rt.body, hdr...)
			refusedWith(t, http.StatusForbidden, "client_header_required", code, body)
			if rt.method == "PUT" && rt.path == "/v1/kv/app/k" {
				keyAbsent(t, f, "app/k")
			}
			require.Contains(t, body, ClientHeader, what)
			refused++
		}
		// application/json is enough where the body is JSON, not where it
		// is raw.
		code, body := call(t, nil, "http", addr, "", rt.method, rt.path, rt.body, "Content-Type", "application/json; charset=utf-8")
		if rt.json {
			require.NotEqual(t, "client_header_required", codeOf(body), "%s: %s", what, body)
		} else {
			refusedWith(t, http.StatusForbidden, "client_header_required", code, body)
			refused++
		}
		// The header is always enough.
		_, body = call(t, nil, "http", addr, "", rt.method, rt.path, rt.body, ClientHeader, "test", "Content-Type", "text/plain")
		require.NotEqual(t, "client_header_required", codeOf(body), "%s: %s", what, body)
	}
	require.EqualValues(t, refused, refusals(f, refusedClient))
	// Reads need nothing.
	code, body := call(t, nil, "http", addr, "", "GET", "/v1/cluster", "")
	require.Equal(t, http.StatusOK, code, body)
}

func codeOf(body string) string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	return e.Code
}

// TestBrowserAttackShape is the request the security review sent: a job
// posted as text/plain from a foreign origin, through a rebound name.
func TestBrowserAttackShape(t *testing.T) {
	t.Parallel()
	f, addr := listening(t)
	_, port, _ := net.SplitHostPort(addr)
	spec := `{"name": "pwn", "task": {"command": "id"}}`
	for _, tc := range []struct {
		host string
		hdr  []string
	}{
		{"rebind.example:" + port, []string{"Content-Type", "text/plain", "Origin", "http://rebind.example:" + port}},
		{"", []string{"Content-Type", "text/plain", "Origin", "http://evil.example"}},
		{"", []string{"Content-Type", "text/plain"}},
	} {
		code, body := call(t, nil, "http", addr, tc.host, "POST", "/v1/jobs", spec, tc.hdr...)
		require.GreaterOrEqual(t, code, 400, body)
		require.Less(t, code, 500, body)
	}
	requireAnswer(t, f.do("GET", "/v1/jobs/pwn", ""), http.StatusNotFound, "job_not_found")
	require.EqualValues(t, 1, refusals(f, refusedHost))
	require.EqualValues(t, 1, refusals(f, refusedOrigin))
	require.EqualValues(t, 1, refusals(f, refusedClient))
	// The refusals are exported.
	code, body := call(t, nil, "http", addr, "", "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `corral_http_requests_refused_total{reason="host"} 1`)
	require.Contains(t, body, `corral_http_requests_refused_total{reason="client_header"} 1`)
}

// TestBrowserGoClient: the Go client passes every check, on the raw PUT,
// a JSON route and a stream.
func TestBrowserGoClient(t *testing.T) {
	t.Parallel()
	f, addr := listening(t)
	cl, err := client.New(client.Config{Endpoints: []string{"http://" + addr}})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = cl.Put(ctx, "app/c", []byte("v"))
	require.NoError(t, err)
	_, _, err = cl.Delete(ctx, "app/c")
	require.NoError(t, err)
	_, err = cl.Grant(ctx, 10*time.Second)
	require.NoError(t, err)
	for _, r := range []string{refusedHost, refusedOrigin, refusedClient} {
		require.Zero(t, refusals(f, r), r)
	}
	// A client given its own http.Client sends the header too.
	cl, err = client.New(client.Config{Endpoints: []string{"http://" + addr}, HTTPClient: &http.Client{}})
	require.NoError(t, err)
	_, err = cl.Put(ctx, "app/d", []byte("v"))
	require.NoError(t, err)
}

// TestBrowserPeers: other controllers reach ServePeers with Host
// controller-N.corral; the public listener's checks do not apply there.
func TestBrowserPeers(t *testing.T) {
	t.Parallel()
	f, addr := listening(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.srv.ServePeers(ln)
	code, body := call(t, nil, "http", ln.Addr().String(), "controller-2.corral:80", "POST", "/v1/leases", `{"ttl": "10s"}`,
		forwardedHeader, "2")
	require.Equal(t, http.StatusOK, code, body)
	code, body = call(t, nil, "http", ln.Addr().String(), "controller-2.corral:80", "GET", "/v1/cluster", "")
	require.Equal(t, http.StatusOK, code, body)
	// The same Host on the public listener is refused.
	code, body = call(t, nil, "http", addr, "controller-2.corral:80", "GET", "/v1/cluster", "")
	refusedWith(t, http.StatusMisdirectedRequest, "host_not_allowed", code, body)
}

// TestBrowserChecksNeverPanic: odd Hosts and Origins get a 4xx.
func TestBrowserChecksNeverPanic(t *testing.T) {
	t.Parallel()
	_, addr := listening(t)
	for _, o := range []string{"http://", "http://[::1", "://", "http://a:b:c", "javascript:alert(1)", strings.Repeat("x", 4096)} {
		code, body := call(t, nil, "http", addr, "", "POST", "/v1/leases", "{}", "Origin", o, ClientHeader, "t")
		refusedWith(t, http.StatusForbidden, "origin_not_allowed", code, body)
	}
	for _, h := range []string{"[::1", "a:b:c", "[]:1", "::1]"} {
		code, body := call(t, nil, "http", addr, h, "GET", "/v1/cluster", "")
		require.GreaterOrEqual(t, code, 400, "Host %q: %s", h, body)
		require.Less(t, code, 500, "Host %q: %s", h, body)
	}
}
