package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/coord"
	"github.com/corral-dev/corral/transport"
)

// zkKeepAlivePath is the peer-only route a follower's ZooKeeper server
// refreshes its sessions' leases through at the leader. It is served on
// the cluster link alone (mutual TLS, controller certificates), never on
// the public API: ZooKeeper sessions are not API tokens, and the leader's
// lessor is the only one that can move a deadline.
const zkKeepAlivePath = "/internal/zk/keepalive"

// maxZKKeepAliveBatch bounds one forwarded keep-alive (the ZooKeeper
// server sends the sessions active since its last batch).
const maxZKKeepAliveBatch = metadata.MaxLeases

// zkBackend is what the ZooKeeper server needs of this controller
// (zk.Backend).
type zkBackend struct{ c *Controller }

func (b zkBackend) State() *metadata.State { return b.c.r.State() }

// AppliedIndex is the state's own index: it moves inside Apply, before
// the batch's waiters are told, so a reply's zxid is never below the zxid
// of the write it answers.
func (b zkBackend) AppliedIndex() uint64 { return b.c.r.State().AppliedIndex() }

func (b zkBackend) WaitApplied(ctx context.Context, idx uint64) error {
	for {
		cur, ch := b.c.r.Applied()
		if cur >= idx || b.c.r.State().AppliedIndex() >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for applied index %d (at %d): %w", idx, cur, ctx.Err())
		}
	}
}

// Propose returns an error only when the outcome is unknown or
// nothing was proposed; a committed refusal (NodeExists, BadVersion...) is
// in Result.Err alone, as the server expects: it answers that with its
// ZooKeeper code and keeps the connection.
func (b zkBackend) Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	res, err := b.c.r.Propose(ctx, cmd)
	if err != nil && res.Err != nil && err == res.Err { //nolint:errorlint // identity: Propose folded res.Err in
		return res, nil
	}
	return res, err
}

func (b zkBackend) LinearizableRead(ctx context.Context) error { return b.c.r.LinearizableRead(ctx) }

func (b zkBackend) IsLeader() bool { return b.c.r.IsLeader() }

func (b zkBackend) Now() time.Time { return time.Now() }

// KeepAlive refreshes the leases at the leader: here when this controller
// leads, else over the cluster link.
func (b zkBackend) KeepAlive(ctx context.Context, ids []int64) ([]int64, error) {
	if b.c.r.IsLeader() {
		_, missing, err := coord.KeepAlive(ctx, b.c.r, b.c.lessor, ids)
		if !errors.Is(err, coord.ErrNotPrimary) {
			return missing, err
		}
	}
	lead := b.c.r.LeaderID()
	if lead == 0 || lead == b.c.cfg.NodeID {
		return nil, errNoLeaderYet
	}
	rt := b.c.peerRT
	if rt == nil {
		return nil, errors.New("zk keep-alive: no cluster link to the leader (the peer API needs --http-addr)")
	}
	body, err := json.Marshal(zkKeepAliveBody{IDs: ids})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, transport.PeerURL(lead)+zkKeepAlivePath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("zk keep-alive at leader %d: %w", lead, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("zk keep-alive at leader %d: %w", lead, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("zk keep-alive at leader %d: %s: %s", lead, resp.Status, bytes.TrimSpace(raw))
	}
	var out zkKeepAliveBody
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("zk keep-alive at leader %d: bad answer: %w", lead, err)
	}
	return out.Missing, nil
}

// errNoLeaderYet: no leader to refresh leases at; the ZooKeeper server
// retries on its next batch and expires nothing for it.
var errNoLeaderYet = errors.New("zk keep-alive: no leader known yet")

type zkKeepAliveBody struct {
	IDs     []int64 `json:"ids,omitempty"`
	Missing []int64 `json:"missing"`
}

// serveZKKeepAlive is zkKeepAlivePath at the leader.
func (c *Controller) serveZKKeepAlive(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, err error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
	}
	if r.Method != http.MethodPost {
		fail(http.StatusMethodNotAllowed, errors.New("use POST"))
		return
	}
	var in zkKeepAliveBody
	dec := json.NewDecoder(io.LimitReader(r.Body, 32<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || len(in.IDs) == 0 || len(in.IDs) > maxZKKeepAliveBatch {
		fail(http.StatusBadRequest, fmt.Errorf("body must be {\"ids\": [...]} with 1 to %d ids (%v)", maxZKKeepAliveBatch, err))
		return
	}
	_, missing, err := coord.KeepAlive(r.Context(), c.r, c.lessor, in.IDs)
	if err != nil {
		fail(http.StatusServiceUnavailable, err)
		return
	}
	if missing == nil {
		missing = []int64{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(zkKeepAliveBody{Missing: missing})
}
