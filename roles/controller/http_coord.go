package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/coord"
)

// Coordination API limits.
const (
	// MaxKeepAliveBatch bounds the ids of one batch keep-alive.
	MaxKeepAliveBatch = 4096
	// MaxLockWait bounds ?wait= of lock acquires and campaigns.
	MaxLockWait = 60 * time.Second
	// maxNameBytes bounds lock, election, service and instance names.
	maxNameBytes = 256
)

const (
	lockPrefix     = metadata.SystemPrefix + "locks/"
	electionPrefix = metadata.SystemPrefix + "elections/"
	servicePrefix  = metadata.ServicePrefix
	// WorkerService is the service under which alive workers are listed.
	WorkerService = "corral-worker"
)

func (c *Controller) registerCoordRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/leases", c.handleLeaseGrant)
	mux.HandleFunc("POST /v1/leases/keepalive", c.leaderOnly(c.handleKeepAliveBatch))
	mux.HandleFunc("POST /v1/leases/keepalive/stream", c.handleKeepAliveStream)
	mux.HandleFunc("POST /v1/leases/{id}/keepalive", c.leaderOnly(c.handleKeepAlive))
	mux.HandleFunc("GET /v1/leases/{id}", c.leaderOnly(c.handleLeaseGet))
	mux.HandleFunc("DELETE /v1/leases/{id}", c.handleLeaseRevoke)
	mux.HandleFunc("GET /v1/watch/{prefix...}", c.handleWatch)
	mux.HandleFunc("POST /v1/locks/{name}", c.handleLockAcquire(lockPrefix))
	mux.HandleFunc("DELETE /v1/locks/{name}", c.handleLockRelease(lockPrefix))
	mux.HandleFunc("GET /v1/locks/{name}", c.handleLockGet(lockPrefix))
	mux.HandleFunc("POST /v1/elections/{name}/campaign", c.handleLockAcquire(electionPrefix))
	mux.HandleFunc("POST /v1/elections/{name}/resign", c.handleLockRelease(electionPrefix))
	mux.HandleFunc("GET /v1/elections/{name}", c.handleLockGet(electionPrefix))
	mux.HandleFunc("PUT /v1/services/{name}/{instance}", c.handleServicePut)
	mux.HandleFunc("DELETE /v1/services/{name}/{instance}", c.handleServiceDelete)
	mux.HandleFunc("GET /v1/services/{name}", c.handleServiceList)
}

// coordError maps state-machine refusals of coordination ops to answers.
func coordError(err error) error {
	switch {
	case errors.Is(err, metadata.ErrLeaseNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "lease_not_found", Message: err.Error()}
	case errors.Is(err, metadata.ErrTooManyLeases), errors.Is(err, metadata.ErrTooManyWaiters):
		return &apiError{Status: http.StatusTooManyRequests, Code: "limit", Message: err.Error()}
	}
	return kvError(err)
}

func (c *Controller) proposeCoord(ctx context.Context, op metadata.Op, key string, p any) (metadata.Result, error) {
	cmd, err := metadata.NewCoordCommand(op, key, p)
	if err != nil {
		return metadata.Result{}, err
	}
	res, err := c.Propose(ctx, cmd)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return res, coordError(err)
	}
	return res, nil
}

func parseLeaseID(s, what string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("%s must be a positive lease id, got %q", what, s)
	}
	return id, nil
}

func leaseQuery(r *http.Request) (int64, error) {
	s := r.URL.Query().Get("lease")
	if s == "" {
		return 0, badRequest("the lease query parameter is required (grant one with POST /v1/leases)")
	}
	return parseLeaseID(s, "lease")
}

type leaseJSON struct {
	ID          int64    `json:"id"`
	TTL         string   `json:"ttl"`
	TTLMS       int64    `json:"ttl_ms"`
	RemainingMS *int64   `json:"remaining_ms,omitempty"`
	Keys        []string `json:"keys,omitempty"`
	Locks       []string `json:"locks,omitempty"`
}

func leaseOut(id, ttlMS int64) leaseJSON {
	return leaseJSON{ID: id, TTLMS: ttlMS, TTL: (time.Duration(ttlMS) * time.Millisecond).String()}
}

func (c *Controller) handleLeaseGrant(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TTL string `json:"ttl"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeError(w, badRequest("body must be {\"ttl\": \"10s\"}: %v", err))
		return
	}
	ttl, err := time.ParseDuration(in.TTL)
	if err != nil {
		writeError(w, badRequest("ttl %q is not a duration like \"10s\": %v", in.TTL, err))
		return
	}
	if ttl < metadata.MinLeaseTTLMS*time.Millisecond || ttl > metadata.MaxLeaseTTLMS*time.Millisecond {
		writeError(w, badRequest("ttl %s is outside [%s, %s]", ttl, metadata.MinLeaseTTLMS*time.Millisecond, metadata.MaxLeaseTTLMS*time.Millisecond))
		return
	}
	res, err := c.proposeCoord(r.Context(), metadata.OpLeaseGrant, "", metadata.LeaseGrantPayload{TTLMS: ttl.Milliseconds()})
	if err != nil {
		writeError(w, err)
		return
	}
	g := res.Out.(metadata.LeaseGrant)
	writeJSON(w, http.StatusOK, leaseOut(g.ID, g.TTLMS))
}

func (c *Controller) handleLeaseRevoke(w http.ResponseWriter, r *http.Request) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := c.proposeCoord(r.Context(), metadata.OpLeaseRevoke, "", metadata.LeaseRevokePayload{IDs: []int64{id}})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision, "deleted": res.Deleted})
}

// keepAlive refreshes leases on the leader. The deadline counts from before
// the leadership check (a ReadIndex round), so a deposed leader's answer can
// never promise more than its successor's reset (now + TTL) grants.
func (c *Controller) keepAlive(ctx context.Context, ids []int64) (alive []leaseJSON, missing []int64, err error) {
	start := time.Now()
	if err := c.linearizableRead(ctx); err != nil {
		return nil, nil, err
	}
	st := c.state.Load()
	for _, id := range ids {
		l, ok := st.Lease(id)
		if !ok {
			missing = append(missing, id)
			continue
		}
		switch err := c.refreshLease(id, time.Duration(l.TTLMS)*time.Millisecond, start); {
		case errors.Is(err, coord.ErrLeaseExpiring):
			missing = append(missing, id)
			continue
		case err != nil:
			return nil, nil, err
		}
		alive = append(alive, leaseOut(id, l.TTLMS))
	}
	return alive, missing, nil
}

func (c *Controller) handleKeepAlive(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		writeError(w, err)
		return
	}
	alive, _, err := c.keepAlive(r.Context(), []int64{id})
	if err != nil {
		writeError(w, err)
		return
	}
	if len(alive) == 0 {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: "lease_not_found",
			Message: fmt.Sprintf("lease %d not found (expired or revoked)", id)})
		return
	}
	writeJSON(w, http.StatusOK, alive[0])
}

func (c *Controller) handleKeepAliveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		IDs []int64 `json:"ids"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeError(w, badRequest("body must be {\"ids\": [1, 2, ...]}: %v", err))
		return
	}
	if len(in.IDs) == 0 || len(in.IDs) > MaxKeepAliveBatch {
		writeError(w, badRequest("ids must name 1 to %d leases, got %d", MaxKeepAliveBatch, len(in.IDs)))
		return
	}
	alive, missing, err := c.keepAlive(r.Context(), in.IDs)
	if err != nil {
		writeError(w, err)
		return
	}
	if alive == nil {
		alive = []leaseJSON{}
	}
	if missing == nil {
		missing = []int64{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"leases": alive, "not_found": missing})
}

func (c *Controller) handleLeaseGet(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := c.linearizableRead(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	l, ok := c.state.Load().Lease(id)
	if !ok {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: "lease_not_found",
			Message: fmt.Sprintf("lease %d not found (expired or revoked)", id)})
		return
	}
	out := leaseOut(id, l.TTLMS)
	out.Keys, out.Locks = l.Keys, l.Locks
	if rem, ok := c.lessor.Remaining(id, time.Duration(l.TTLMS)*time.Millisecond); ok {
		ms := rem.Milliseconds()
		out.RemainingMS = &ms
	}
	writeJSON(w, http.StatusOK, out)
}

// handlePutLease is PUT /v1/kv/{key}?lease=ID (handlePut hands it over).
func (c *Controller) handlePutLease(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if err := writableKey(key); err != nil {
		writeError(w, err)
		return
	}
	lease, err := leaseQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	prev, hasPrev, val, err := putArgs(r)
	if err != nil {
		writeError(w, err)
		return
	}
	cmd, err := metadata.NewCoordCommand(metadata.OpPutLease, key, metadata.PutLeasePayload{Value: val, Lease: lease})
	if err != nil {
		writeError(w, err)
		return
	}
	cmd.PrevRevision, cmd.HasPrev = prev, hasPrev
	res, err := c.Propose(r.Context(), cmd)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		writeError(w, coordError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision})
}

// writableKey is validateKey for plain puts and deletes: keys under
// metadata.SystemPrefix are written only by corral itself.
func writableKey(key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if strings.HasPrefix(key, metadata.SystemPrefix) {
		return badRequest("keys under %q are reserved for corral's locks, elections and services; read or watch them, do not write them", metadata.SystemPrefix)
	}
	return nil
}

func validName(s, what string) error {
	switch {
	case s == "":
		return badRequest("%s is empty", what)
	case len(s) > maxNameBytes:
		return badRequest("%s is %d bytes; the limit is %d", what, len(s), maxNameBytes)
	case strings.ContainsAny(s, "/\x00"):
		return badRequest("%s %q contains '/' or NUL", what, s)
	}
	return validateKey(s)
}

func queryWait(r *http.Request) (time.Duration, error) {
	s := r.URL.Query().Get("wait")
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxLockWait {
		return 0, badRequest("wait must be a duration between 0s and %s, got %q", MaxLockWait, s)
	}
	return d, nil
}

type lockJSON struct {
	Name         string               `json:"name"`
	Key          string               `json:"key"`
	Held         bool                 `json:"held"`
	FencingToken int64                `json:"fencing_token,omitempty"`
	Lease        int64                `json:"lease,omitempty"`
	Owner        string               `json:"owner,omitempty"`
	Holder       *metadata.LockOwner  `json:"holder,omitempty"`
	Waiters      []metadata.LockOwner `json:"waiters,omitempty"`
	Revision     int64                `json:"revision"`
}

// handleLockAcquire is POST /v1/locks/{name} and POST
// /v1/elections/{name}/campaign. The acquire is committed as a waiter; the
// state machine grants it when it reaches the head of the queue with its
// lease alive. If wait elapses first, the handler commits its own dequeue
// (waiting_only): if the grant committed before that, the lease holds the
// lock and the answer is 200 with the token, otherwise 409 lock_busy.
func (c *Controller) handleLockAcquire(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if err := validName(name, "name"); err != nil {
			writeError(w, err)
			return
		}
		lease, err := leaseQuery(r)
		if err != nil {
			writeError(w, err)
			return
		}
		wait, err := queryWait(r)
		if err != nil {
			writeError(w, err)
			return
		}
		owner := r.URL.Query().Get("id")
		if prefix == electionPrefix && owner == "" {
			writeError(w, badRequest("id (the candidate's identity) is required"))
			return
		}
		if len(owner) > maxNameBytes {
			writeError(w, badRequest("id is longer than %d bytes", maxNameBytes))
			return
		}
		key := prefix + name
		res, err := c.proposeCoord(r.Context(), metadata.OpLockAcquire, key, metadata.LockPayload{Lease: lease, Owner: owner, NoWait: wait == 0})
		if err != nil {
			writeError(w, err)
			return
		}
		st := res.Out.(metadata.LockStatus)
		if !st.Held && wait > 0 {
			st, err = c.awaitLock(r.Context(), key, lease, wait)
			if err != nil {
				writeError(w, err)
				return
			}
		}
		if !st.Held {
			msg := fmt.Sprintf("%q is held", name)
			if st.Holder != nil {
				msg = fmt.Sprintf("%q is held by lease %d (fencing token %d)", name, st.Holder.Lease, st.Holder.Token)
			}
			writeError(w, &apiError{Status: http.StatusConflict, Code: "lock_busy", Message: msg + "; retry or wait longer"})
			return
		}
		writeJSON(w, http.StatusOK, lockJSON{Name: name, Key: key, Held: true, FencingToken: st.Token,
			Lease: lease, Owner: owner, Revision: st.Token})
	}
}

// awaitLock waits for the grant of key to lease on the local state, then
// gives up by committing a waiting-only release.
func (c *Controller) awaitLock(ctx context.Context, key string, lease int64, wait time.Duration) (metadata.LockStatus, error) {
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		_, changed := c.applied.get()
		st := c.state.Load()
		if lk, _ := st.LockState(key); lk.Holder != nil && lk.Holder.Lease == lease {
			return metadata.LockStatus{Held: true, Token: lk.Holder.Token}, nil
		}
		if _, ok := st.Lease(lease); !ok {
			return metadata.LockStatus{}, &apiError{Status: http.StatusNotFound, Code: "lease_not_found",
				Message: fmt.Sprintf("lease %d ended while waiting for the lock", lease)}
		}
		select {
		case <-changed:
			continue
		case <-tctx.Done():
		case <-c.stopc:
			return metadata.LockStatus{}, ErrStopped
		}
		break
	}
	// Give up: the dequeue commits after any grant already in the log, so
	// its answer is the final word.
	gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RequestTimeout)
	defer gcancel()
	res, err := c.proposeCoord(gctx, metadata.OpLockRelease, key, metadata.LockPayload{Lease: lease, WaitingOnly: true})
	if err != nil {
		return metadata.LockStatus{}, err
	}
	return res.Out.(metadata.LockStatus), nil
}

func (c *Controller) handleLockRelease(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if err := validName(name, "name"); err != nil {
			writeError(w, err)
			return
		}
		lease, err := leaseQuery(r)
		if err != nil {
			writeError(w, err)
			return
		}
		res, err := c.proposeCoord(r.Context(), metadata.OpLockRelease, prefix+name, metadata.LockPayload{Lease: lease})
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"revision": res.Revision, "released": true})
	}
}

// handleLockGet is GET /v1/locks/{name} and GET /v1/elections/{name}
// (linearizable): the holder (for elections: the leader, with its fencing
// token as the epoch) and the queue.
func (c *Controller) handleLockGet(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if err := validName(name, "name"); err != nil {
			writeError(w, err)
			return
		}
		if err := c.linearizableRead(r.Context()); err != nil {
			writeError(w, err)
			return
		}
		st := c.state.Load()
		lk, _ := st.LockState(prefix + name)
		out := lockJSON{Name: name, Key: prefix + name, Holder: lk.Holder, Waiters: lk.Waiters, Revision: st.Revision()}
		if lk.Holder != nil {
			out.Held, out.FencingToken, out.Lease, out.Owner = true, lk.Holder.Token, lk.Holder.Lease, lk.Holder.Owner
		}
		if prefix == electionPrefix {
			e := map[string]any{"name": name, "revision": out.Revision, "waiters": len(lk.Waiters)}
			if lk.Holder != nil {
				e["leader"], e["epoch"], e["lease"] = lk.Holder.Owner, lk.Holder.Token, lk.Holder.Lease
			}
			writeJSON(w, http.StatusOK, e)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// ServiceInstance is the stored form of a registered instance.
type ServiceInstance struct {
	Address  string            `json:"address"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (c *Controller) handleServicePut(w http.ResponseWriter, r *http.Request) {
	name, inst := r.PathValue("name"), r.PathValue("instance")
	for _, v := range [][2]string{{name, "service name"}, {inst, "instance"}} {
		if err := validName(v[0], v[1]); err != nil {
			writeError(w, err)
			return
		}
	}
	if name == WorkerService {
		writeError(w, badRequest("service %q is maintained by corral from the worker registry", WorkerService))
		return
	}
	lease, err := leaseQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var in ServiceInstance
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeError(w, badRequest("body must be {\"address\": \"host:port\", \"metadata\": {...}}: %v", err))
		return
	}
	val, _ := json.Marshal(in)
	res, err := c.proposeCoord(r.Context(), metadata.OpPutLease, servicePrefix+name+"/"+inst,
		metadata.PutLeasePayload{Value: val, Lease: lease, System: true})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision})
}

func (c *Controller) handleServiceDelete(w http.ResponseWriter, r *http.Request) {
	name, inst := r.PathValue("name"), r.PathValue("instance")
	for _, v := range [][2]string{{name, "service name"}, {inst, "instance"}} {
		if err := validName(v[0], v[1]); err != nil {
			writeError(w, err)
			return
		}
	}
	res, err := c.proposeCoord(r.Context(), metadata.OpDeleteSystem, servicePrefix+name+"/"+inst, struct{}{})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision, "deleted": res.Deleted})
}

type instanceJSON struct {
	Instance string            `json:"instance"`
	Address  string            `json:"address,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Lease    int64             `json:"lease,omitempty"`
	// ModRevision is the revision of the instance's last registration.
	ModRevision int64 `json:"mod_revision,omitempty"`
	// Worker is set for instances of corral-worker: the worker registry's
	// view, with the load of its last heartbeat (null if unknown).
	Worker *workerJSON `json:"worker,omitempty"`
}

func (c *Controller) handleServiceList(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := validName(name, "service name"); err != nil {
		writeError(w, err)
		return
	}
	if name == WorkerService && !c.isLeader.Load() && r.Header.Get(forwardedHeader) == "" {
		// Worker load is known only to the leader.
		c.forwardToLeader(w, r, nil)
		return
	}
	if err := c.linearizableRead(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	st := c.state.Load()
	out := []instanceJSON{}
	prefix := servicePrefix + name + "/"
	for _, kv := range st.Range(prefix, 0) {
		var si ServiceInstance
		_ = json.Unmarshal(kv.Value, &si)
		out = append(out, instanceJSON{Instance: strings.TrimPrefix(kv.Key, prefix), Address: si.Address,
			Metadata: si.Metadata, Lease: st.KeyLease(kv.Key), ModRevision: kv.ModRevision})
	}
	if name == WorkerService {
		out = append(out, c.workerInstances()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"service": name, "instances": out, "revision": st.Revision()})
}

// workerInstances lists the alive (including suspect: alive but late)
// workers of the worker registry as instances of corral-worker, with their
// load (http_workers.go's view).
func (c *Controller) workerInstances() []instanceJSON {
	var out []instanceJSON
	for _, wk := range c.workerView(time.Now()).Workers {
		if wk.State != string(metadata.WorkerAlive) && wk.State != "suspect" {
			continue
		}
		addr := ""
		if len(wk.Addresses) > 0 {
			addr = wk.Addresses[0]
		}
		out = append(out, instanceJSON{Instance: wk.ID, Address: addr, Metadata: wk.Labels, Worker: &wk})
	}
	return out
}
