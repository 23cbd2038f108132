package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
)

// Per-stage benchmarks of a put (issue 21, item 6): the HTTP stages. The
// raft, storage and apply stages are in replica/, raftlog/, metadata/ and
// the controller package (put_stage_bench_test.go in each).

// instantStore answers every proposal at once with the next revision:
// the handler's cost with nothing behind it.
type instantStore struct {
	state *metadata.State
	rev   int64
}

func (s *instantStore) State() *metadata.State { return s.state }

func (s *instantStore) Propose(_ context.Context, _ *metadata.Command) (metadata.Result, error) {
	s.rev++
	return metadata.Result{Revision: s.rev}, nil
}

func (s *instantStore) ProposePayload(context.Context, metadata.Op, any) (metadata.Result, error) {
	s.rev++
	return metadata.Result{Revision: s.rev}, nil
}

func (s *instantStore) LinearizableRead(context.Context) error { return nil }

func newStageServer(b *testing.B) *Server {
	b.Helper()
	srv := New(Config{NodeID: 1, HTTPAddr: "127.0.0.1:0", RequestTimeout: time.Second,
		TickInterval: time.Millisecond, Registry: prometheus.NewRegistry()},
		Backend{Cluster: &fakeCluster{self: 1, leader: 1, httpAddrs: map[uint64]string{}},
			Store: &instantStore{state: metadata.New()}, Workers: &fakeWorkers{},
			Coordination: &fakeCoord{alive: map[int64]int64{}}, Watches: &fakeWatches{}, Backups: &fakeBackups{}})
	if err := srv.loadToken(); err != nil {
		b.Fatal(err)
	}
	srv.aclCaughtUp.Store(true)
	return srv
}

// stageBody is a put's 256-byte value.
var stageBody = strings.Repeat("v", 256)

// stageRequest is one parsed PUT request, reused by every op with its body
// rewound: net/http's parsing of the request line and headers off the
// socket is not in these benchmarks (it is in the profiles of
// docs/PERFORMANCE.md), only what corral does with the request.
func stageRequest() (*strings.Reader, *http.Request) {
	body := strings.NewReader(stageBody)
	req := httptest.NewRequest(http.MethodPut, "/v1/kv/bench/key/00000042", nil)
	req.Body = io.NopCloser(body)
	req.ContentLength = int64(len(stageBody))
	return body, req
}

// BenchmarkStageHTTPPut is one PUT /v1/kv/{key} with a 256-byte body
// through the whole HTTP handler chain (routing, auth, metrics, key and
// value validation, the command built, the JSON answer written) against
// a store that answers at once: everything a controller does for a put
// except raft, storage and apply. No socket: httptest request/recorder.
func BenchmarkStageHTTPPut(b *testing.B) {
	srv := newStageServer(b)
	h := srv.Handler()
	body, req := stageRequest()
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(stageBody)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkStageHTTPDecodePut is the put handler's own parsing and
// validation (path value, key checks, query, body read, command built),
// called directly, without the routing and middleware around it.
func BenchmarkStageHTTPDecodePut(b *testing.B) {
	srv := newStageServer(b)
	body, req := stageRequest()
	req.SetPathValue("key", "bench/key/00000042")
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(stageBody)
		v, err := srv.handlePut(nil, req)
		if err != nil || v == nil {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkStageResponse is the put's answer: {"revision":N} written as
// JSON with its header, as handle does for a 200.
func BenchmarkStageResponse(b *testing.B) {
	rec := httptest.NewRecorder()
	b.ReportAllocs()
	var rev int64
	for b.Loop() {
		rev++
		rec.Body.Reset()
		writeJSON(rec, http.StatusOK, map[string]int64{"revision": rev})
	}
	if !strings.HasPrefix(rec.Body.String(), `{"revision":`) {
		b.Fatal(rec.Body.String())
	}
}
