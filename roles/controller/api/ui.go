package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/corral-dev/corral/roles/controller/api/view"
	"github.com/corral-dev/corral/web"
)

// uiEventInterval is how often GET /v1/events sends a summary: often enough
// for a live page, rare enough that an open dashboard costs nothing.
const uiEventInterval = time.Second

// uiPeerTimeout bounds asking another controller for its summary, so a dead
// or partitioned peer delays a tick by well under its interval.
const uiPeerTimeout = 700 * time.Millisecond

// registerUIRoutes adds the embedded dashboard (package web) under /ui/, the
// redirect of / to it, and the live summary stream it reads.
func (s *Server) registerUIRoutes(mux *routeMux) {
	mux.Handle("GET "+web.Prefix, web.Handler())
	// "/{$}" matches only "/", so every other unknown path still reaches
	// the JSON 404 catch-all. ServeMux itself redirects "/ui" to "/ui/".
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, web.Prefix, http.StatusFound)
	})
	mux.HandleFunc("GET /v1/events", s.handle(s.handleEvents))
}

// uiSummary is one "summary" event: what the overview page shows, in one
// object so the page needs no other request to stay current.
type uiSummary struct {
	At       string             `json:"at"`
	NodeID   uint64             `json:"node_id"`
	LeaderID uint64             `json:"leader_id"`
	Term     uint64             `json:"term"`
	Cluster  clusterWithWorkers `json:"cluster"`
	Workers  map[string]int     `json:"workers"`
	Counts   uiCounts           `json:"counts"`
	// Allocations per state (replicated state), so the overview need not
	// list every allocation.
	Allocations map[string]int `json:"allocations"`
	// LeaderChanges this controller saw in the last hour.
	LeaderChanges []view.LeaderChange `json:"leader_changes"`
	// Figures are this controller's counters and histogram sums the charts
	// turn into rates (see uiFigureNames).
	Figures map[string]float64 `json:"figures"`
	// Peers is every member's own view (this controller's included), as
	// each answered GET /v1/events?once=true just now.
	Peers []uiPeer `json:"peers,omitempty"`
}

type uiCounts struct {
	Keys     int   `json:"keys"`
	Leases   int   `json:"leases"`
	Revision int64 `json:"revision"`
	Watchers int   `json:"watchers"`
}

// uiPeer is one controller as it reports itself; Up is false (with Error)
// when this controller could not reach its HTTP API.
type uiPeer struct {
	ID           uint64             `json:"id"`
	Address      string             `json:"address"`
	HTTPAddress  string             `json:"http_address"`
	Voter        bool               `json:"voter"`
	Up           bool               `json:"up"`
	Error        string             `json:"error,omitempty"`
	LeaderID     uint64             `json:"leader_id"`
	Term         uint64             `json:"term"`
	CommitIndex  uint64             `json:"commit_index"`
	AppliedIndex uint64             `json:"applied_index"`
	Figures      map[string]float64 `json:"figures,omitempty"`
}

// uiFigureNames are the series the dashboard charts. Counters and gauges are
// summed over their labels, histograms give name_sum and name_count, and
// names in uiFigureMax give the largest value over labels instead.
var uiFigureNames = map[string]bool{
	"corral_raft_leader_changes_total":        true,
	"corral_raft_proposals_committed_total":   true,
	"corral_raft_apply_duration_seconds":      true,
	"corral_workers_heartbeats_total":         true,
	"corral_workers_heartbeat_handle_seconds": true,
	"corral_workers_fencings_total":           true,
	"corral_transport_peer_rtt_seconds":       true,
}

var uiFigureMax = map[string]bool{"corral_transport_peer_rtt_seconds": true}

// handleEvents is GET /v1/events: a Server-Sent Events stream with a
// "summary" event every second until the client goes away or the
// controller stops. With ?once=true it answers one summary as JSON, without
// peers (controllers use it to ask each other).
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.URL.Query().Get("once") == "true" {
		return s.summary(r.Context(), "", false), nil
	}
	s.streamEvents(w, r)
	return nil, nil
}

// streamEvents writes the SSE stream of summaries.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	// A slow reader must not pin this goroutine: every write gets a
	// deadline, cleared again when the stream ends.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	auth := r.Header.Get("Authorization")
	// Polling for shutdown every 100 ms: Close closes the watch hub before
	// the HTTP server's graceful shutdown, which would otherwise wait for
	// this endless response.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	next := time.Now()
	for {
		if !time.Now().Before(next) {
			b, err := json.Marshal(s.summary(r.Context(), auth, true))
			if err != nil {
				return
			}
			if !send(fmt.Appendf(nil, "event: summary\ndata: %s\n\n", b)) {
				return
			}
			next = time.Now().Add(uiEventInterval)
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.stopc:
			return
		case <-poll.C:
			if s.uiStopping() {
				return
			}
		}
	}
}

// uiStopping reports whether Close has begun (it closes the hub first).
func (s *Server) uiStopping() bool { return s.hub.Closed() }

// summary builds one summary from the same views GET /v1/cluster and
// /v1/workers answer with; withPeers adds every member's own report.
func (s *Server) summary(ctx context.Context, auth string, withPeers bool) uiSummary {
	now := time.Now()
	cw := clusterWithWorkers{ClusterInfo: s.cluster.View(), PID: os.Getpid(), Workers: s.workers.WorkerCounts(now)}
	st := s.store.State()
	sum := uiSummary{
		At: now.UTC().Format(time.RFC3339Nano), NodeID: s.cfg.NodeID, LeaderID: cw.LeaderID, Term: cw.Term,
		Cluster: cw, Workers: cw.Workers, Figures: s.figures(),
		Counts:      uiCounts{Keys: st.Count(), Leases: st.LeaseCount(), Revision: st.Revision(), Watchers: s.hub.Watchers()},
		Allocations: map[string]int{}, LeaderChanges: s.cluster.LeaderChanges(now),
	}
	for state, n := range st.AllocCounts() {
		sum.Allocations[string(state)] = n
	}
	if withPeers {
		sum.Peers = s.peerSummaries(ctx, auth, sum)
	}
	return sum
}

// peerSummaries asks every other member for its own summary, concurrently
// and bounded by uiPeerTimeout, so the page sees each controller's commit
// and applied index and whom it believes leads.
func (s *Server) peerSummaries(ctx context.Context, auth string, self uiSummary) []uiPeer {
	voterIDs, learnerIDs := s.cluster.Members()
	voters := map[uint64]bool{}
	for _, id := range voterIDs {
		voters[id] = true
	}
	ids := append(append([]uint64{}, voterIDs...), learnerIDs...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]uiPeer, len(ids))
	var (
		asked []int           // indexes of peers asked
		dones []chan struct{} // closed when their asks end
	)
	for i, id := range ids {
		addr, httpAddr := s.cluster.MemberAddress(id)
		p := uiPeer{ID: id, Address: addr, HTTPAddress: httpAddr, Voter: voters[id]}
		if id == s.cfg.NodeID {
			p.Up, p.LeaderID, p.Term = true, self.LeaderID, self.Term
			p.CommitIndex, p.AppliedIndex, p.Figures = self.Cluster.CommitIndex, self.Cluster.AppliedIndex, self.Figures
			if p.HTTPAddress == "" {
				p.HTTPAddress = s.Addr()
			}
			out[i] = p
			continue
		}
		if _, ok := s.peerBase(id); !ok {
			p.Error = "HTTP address not announced yet"
			out[i] = p
			continue
		}
		out[i] = p
		asked = append(asked, i)
		dones = append(dones, s.peerAsks.ask(id, func() uiPeer { return s.askPeer(context.Background(), auth, p) }))
	}
	// Wait briefly for fresh answers, then show the latest each peer gave:
	// a dead peer (a QUIC dial to it only times out) must not slow this
	// controller's own ticks.
	wait := time.NewTimer(uiPeerWait)
	defer wait.Stop()
collect:
	for _, d := range dones {
		select {
		case <-d:
		case <-wait.C:
			break collect
		case <-ctx.Done():
			break collect
		}
	}
	now := time.Now()
	for _, i := range asked {
		out[i] = s.peerAsks.latest(out[i], now)
	}
	return out
}

func (s *Server) askPeer(ctx context.Context, auth string, p uiPeer) uiPeer {
	ctx, cancel := context.WithTimeout(ctx, uiPeerTimeout)
	defer cancel()
	base, _ := s.peerBase(p.ID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events?once=true", nil)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	req.Header.Set(forwardedHeader, strconv.FormatUint(s.cfg.NodeID, 10))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.peerClient(uiPeerTimeout).Do(req)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	defer func() {
		// Read to the end so the connection is reused: over the cluster
		// link a new one costs a QUIC handshake, every second, per peer.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		p.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
		return p
	}
	var sum uiSummary
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&sum); err != nil {
		p.Error = "bad summary: " + err.Error()
		return p
	}
	p.Up, p.LeaderID, p.Term = true, sum.LeaderID, sum.Term
	p.CommitIndex, p.AppliedIndex, p.Figures = sum.Cluster.CommitIndex, sum.Cluster.AppliedIndex, sum.Figures
	return p
}

// figures reads uiFigureNames from this controller's registry by name, so
// the summary follows whatever the metrics code registers.
func (s *Server) figures() map[string]float64 {
	out := map[string]float64{}
	mfs, err := s.cfg.Registry.Gather()
	if err != nil && len(mfs) == 0 {
		return out
	}
	for _, mf := range mfs {
		name := mf.GetName()
		if !uiFigureNames[name] {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[name+"_sum"] += m.GetHistogram().GetSampleSum()
				out[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_COUNTER:
				out[name] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v := m.GetGauge().GetValue()
				if uiFigureMax[name] {
					if v > out[name+"_max"] {
						out[name+"_max"] = v
					}
				} else {
					out[name] += v
				}
			}
		}
	}
	return out
}
