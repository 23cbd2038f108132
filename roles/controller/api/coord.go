package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/api/view"
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
	// MaxServiceInstances bounds the instances GET /v1/services/{name}
	// lists (its answer says when more exist).
	MaxServiceInstances = 10000
)

const (
	lockPrefix     = metadata.SystemPrefix + "locks/"
	electionPrefix = metadata.SystemPrefix + "elections/"
	servicePrefix  = metadata.ServicePrefix
	// WorkerService is the service under which alive workers are listed.
	WorkerService = "corral-worker"
)

func (s *Server) registerCoordRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/leases", s.handle(s.handleLeaseGrant))
	mux.HandleFunc("POST /v1/leases/keepalive", s.leaderOnly(s.handleKeepAliveBatch))
	mux.HandleFunc("POST /v1/leases/keepalive/stream", s.handle(s.handleKeepAliveStream))
	mux.HandleFunc("POST /v1/leases/{id}/keepalive", s.leaderOnly(s.handleKeepAlive))
	mux.HandleFunc("GET /v1/leases/{id}", s.leaderOnly(s.handleLeaseGet))
	mux.HandleFunc("GET /v1/leases", s.handle(s.handleLeaseList))
	mux.HandleFunc("DELETE /v1/leases/{id}", s.handle(s.handleLeaseRevoke))
	mux.HandleFunc("GET /v1/watch/{prefix...}", s.handle(s.handleWatch))
	mux.HandleFunc("POST /v1/locks/{name}", s.handle(s.handleLockAcquire(lockPrefix)))
	mux.HandleFunc("DELETE /v1/locks/{name}", s.handle(s.handleLockRelease(lockPrefix)))
	mux.HandleFunc("GET /v1/locks/{name}", s.handle(s.handleLockGet(lockPrefix)))
	mux.HandleFunc("POST /v1/elections/{name}/campaign", s.handle(s.handleLockAcquire(electionPrefix)))
	mux.HandleFunc("POST /v1/elections/{name}/resign", s.handle(s.handleLockRelease(electionPrefix)))
	mux.HandleFunc("GET /v1/elections/{name}", s.handle(s.handleLockGet(electionPrefix)))
	mux.HandleFunc("PUT /v1/services/{name}/{instance}", s.handle(s.handleServicePut))
	mux.HandleFunc("DELETE /v1/services/{name}/{instance}", s.handle(s.handleServiceDelete))
	mux.HandleFunc("GET /v1/services/{name}", s.handle(s.handleServiceList))
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

func (s *Server) proposeCoord(ctx context.Context, op metadata.Op, key string, p any) (metadata.Result, error) {
	cmd, err := metadata.NewCoordCommand(op, key, p)
	if err != nil {
		return metadata.Result{}, err
	}
	return s.propose(ctx, cmd, coordError)
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

// leasesOut renders the leases a keep-alive found alive.
func leasesOut(alive []coord.LeaseTTL) []leaseJSON {
	out := make([]leaseJSON, 0, len(alive))
	for _, l := range alive {
		out = append(out, leaseOut(l.ID, l.TTLMS))
	}
	return out
}

func leaseOut(id, ttlMS int64) leaseJSON {
	return leaseJSON{ID: id, TTLMS: ttlMS, TTL: (time.Duration(ttlMS) * time.Millisecond).String()}
}

func (s *Server) handleLeaseGrant(w http.ResponseWriter, r *http.Request) (any, error) {
	var in struct {
		TTL string `json:"ttl"`
	}
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, 4096), &in); err != nil {
		return nil, badRequest("body must be {\"ttl\": \"10s\"}: %v", err)
	}
	ttl, err := time.ParseDuration(in.TTL)
	if err != nil {
		return nil, badRequest("ttl %q is not a duration like \"10s\": %v", in.TTL, err)
	}
	if ttl < metadata.MinLeaseTTLMS*time.Millisecond || ttl > metadata.MaxLeaseTTLMS*time.Millisecond {
		return nil, badRequest("ttl %s is outside [%s, %s]", ttl, metadata.MinLeaseTTLMS*time.Millisecond, metadata.MaxLeaseTTLMS*time.Millisecond)
	}
	if err := s.admitLease(r); err != nil { // acl_limits.go
		return nil, err
	}
	res, err := s.proposeCoord(r.Context(), metadata.OpLeaseGrant, "",
		metadata.LeaseGrantPayload{TTLMS: ttl.Milliseconds(), Creator: identity(r).AccessorID})
	if err != nil {
		return nil, err
	}
	g := res.Out.(metadata.LeaseGrant)
	return leaseOut(g.ID, g.TTLMS), nil
}

func (s *Server) handleLeaseRevoke(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		return nil, err
	}
	if err := s.allowLeaseRevoke(r, id); err != nil { // acl_limits.go
		return nil, err
	}
	res, err := s.proposeCoord(r.Context(), metadata.OpLeaseRevoke, "", metadata.LeaseRevokePayload{IDs: []int64{id}})
	if err != nil {
		return nil, err
	}
	return map[string]int64{"revision": res.Revision, "deleted": res.Deleted}, nil
}

func (s *Server) handleKeepAlive(w http.ResponseWriter, r *http.Request, _ []byte) (any, error) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		return nil, err
	}
	alive, _, err := s.coord.KeepAlive(r.Context(), []int64{id})
	if err != nil {
		return nil, err
	}
	if len(alive) == 0 {
		return nil, notFound("lease_not_found", "lease %d not found (expired or revoked)", id)
	}
	return leaseOut(alive[0].ID, alive[0].TTLMS), nil
}

func (s *Server) handleKeepAliveBatch(w http.ResponseWriter, r *http.Request, body []byte) (any, error) {
	var in struct {
		IDs []int64 `json:"ids"`
	}
	if err := decodeStrict(bytes.NewReader(body), &in); err != nil {
		return nil, badRequest("body must be {\"ids\": [1, 2, ...]}: %v", err)
	}
	if len(in.IDs) == 0 || len(in.IDs) > MaxKeepAliveBatch {
		return nil, badRequest("ids must name 1 to %d leases, got %d", MaxKeepAliveBatch, len(in.IDs))
	}
	alive, missing, err := s.coord.KeepAlive(r.Context(), in.IDs)
	if err != nil {
		return nil, err
	}
	if missing == nil {
		missing = []int64{}
	}
	return map[string]any{"leases": leasesOut(alive), "not_found": missing}, nil
}

func (s *Server) handleLeaseGet(w http.ResponseWriter, r *http.Request, _ []byte) (any, error) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		return nil, err
	}
	if err := s.store.LinearizableRead(r.Context()); err != nil {
		return nil, err
	}
	l, ok := s.store.State().Lease(id)
	if !ok {
		return nil, notFound("lease_not_found", "lease %d not found (expired or revoked)", id)
	}
	out := leaseOut(id, l.TTLMS)
	out.Keys, out.Locks = l.Keys, l.Locks
	if rem, ok := s.coord.LeaseRemaining(id, time.Duration(l.TTLMS)*time.Millisecond); ok {
		ms := rem.Milliseconds()
		out.RemainingMS = &ms
	}
	return out, nil
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
func (s *Server) handleLockAcquire(prefix string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		name := r.PathValue("name")
		if err := validName(name, "name"); err != nil {
			return nil, err
		}
		lease, err := leaseQuery(r)
		if err != nil {
			return nil, err
		}
		wait, err := queryWait(r)
		if err != nil {
			return nil, err
		}
		owner := r.URL.Query().Get("id")
		if prefix == electionPrefix && owner == "" {
			return nil, badRequest("id (the candidate's identity) is required")
		}
		if len(owner) > maxNameBytes {
			return nil, badRequest("id is longer than %d bytes", maxNameBytes)
		}
		key := prefix + name
		res, err := s.proposeCoord(r.Context(), metadata.OpLockAcquire, key, metadata.LockPayload{Lease: lease, Owner: owner, NoWait: wait == 0})
		if err != nil {
			return nil, err
		}
		st := res.Out.(metadata.LockStatus)
		if !st.Held && wait > 0 {
			st, err = s.coord.AwaitLock(r.Context(), key, lease, wait)
			if err != nil {
				return nil, coordError(err)
			}
		}
		if !st.Held {
			msg := fmt.Sprintf("%q is held", name)
			if st.Holder != nil {
				msg = fmt.Sprintf("%q is held by lease %d (fencing token %d)", name, st.Holder.Lease, st.Holder.Token)
			}
			return nil, httpError(http.StatusConflict, "lock_busy", "%s; retry or wait longer", msg)
		}
		return lockJSON{Name: name, Key: key, Held: true, FencingToken: st.Token,
			Lease: lease, Owner: owner, Revision: st.Token}, nil
	}
}

func (s *Server) handleLockRelease(prefix string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		name := r.PathValue("name")
		if err := validName(name, "name"); err != nil {
			return nil, err
		}
		lease, err := leaseQuery(r)
		if err != nil {
			return nil, err
		}
		res, err := s.proposeCoord(r.Context(), metadata.OpLockRelease, prefix+name, metadata.LockPayload{Lease: lease})
		if err != nil {
			return nil, err
		}
		return map[string]any{"revision": res.Revision, "released": true}, nil
	}
}

// handleLockGet is GET /v1/locks/{name} and GET /v1/elections/{name}
// (linearizable): the holder (for elections: the leader, with its fencing
// token as the epoch) and the queue.
func (s *Server) handleLockGet(prefix string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		name := r.PathValue("name")
		if err := validName(name, "name"); err != nil {
			return nil, err
		}
		if err := s.store.LinearizableRead(r.Context()); err != nil {
			return nil, err
		}
		st := s.store.State()
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
			return e, nil
		}
		return out, nil
	}
}

// ServiceInstance is the stored form of a registered instance.
type ServiceInstance struct {
	Address  string            `json:"address"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (s *Server) handleServicePut(w http.ResponseWriter, r *http.Request) (any, error) {
	name, inst := r.PathValue("name"), r.PathValue("instance")
	for _, v := range [][2]string{{name, "service name"}, {inst, "instance"}} {
		if err := validName(v[0], v[1]); err != nil {
			return nil, err
		}
	}
	if name == WorkerService {
		return nil, badRequest("service %q is maintained by corral from the worker registry", WorkerService)
	}
	lease, err := leaseQuery(r)
	if err != nil {
		return nil, err
	}
	var in ServiceInstance
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, 64<<10), &in); err != nil {
		return nil, badRequest("body must be {\"address\": \"host:port\", \"metadata\": {...}}: %v", err)
	}
	val, _ := json.Marshal(in)
	res, err := s.proposeCoord(r.Context(), metadata.OpPutLease, servicePrefix+name+"/"+inst,
		metadata.PutLeasePayload{Value: val, Lease: lease, System: true})
	if err != nil {
		return nil, err
	}
	return map[string]int64{"revision": res.Revision}, nil
}

func (s *Server) handleServiceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	name, inst := r.PathValue("name"), r.PathValue("instance")
	for _, v := range [][2]string{{name, "service name"}, {inst, "instance"}} {
		if err := validName(v[0], v[1]); err != nil {
			return nil, err
		}
	}
	res, err := s.proposeCoord(r.Context(), metadata.OpDeleteSystem, servicePrefix+name+"/"+inst, struct{}{})
	if err != nil {
		return nil, err
	}
	return map[string]int64{"revision": res.Revision, "deleted": res.Deleted}, nil
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
	Worker *view.WorkerInfo `json:"worker,omitempty"`
}

func (s *Server) handleServiceList(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	if err := validName(name, "service name"); err != nil {
		return nil, err
	}
	if name == WorkerService && !s.cluster.IsLeader() && r.Header.Get(forwardedHeader) == "" {
		// Worker load is known only to the leader.
		return nil, s.forwardToLeader(w, r, nil)
	}
	if err := s.store.LinearizableRead(r.Context()); err != nil {
		return nil, err
	}
	st := s.store.State()
	out := []instanceJSON{}
	prefix := servicePrefix + name + "/"
	// One more than the cap tells whether instances were left out.
	kvs := st.Range(prefix, MaxServiceInstances+1)
	more := len(kvs) > MaxServiceInstances
	if more {
		kvs = kvs[:MaxServiceInstances]
	}
	for _, kv := range kvs {
		var si ServiceInstance
		_ = json.Unmarshal(kv.Value, &si)
		out = append(out, instanceJSON{Instance: strings.TrimPrefix(kv.Key, prefix), Address: si.Address,
			Metadata: si.Metadata, Lease: st.KeyLease(kv.Key), ModRevision: kv.ModRevision})
	}
	if name == WorkerService {
		out = append(out, s.workerInstances()...)
	}
	ans := map[string]any{"service": name, "instances": out, "revision": st.Revision()}
	if more {
		// A registry that large is a bug more often than a need: say so
		// rather than send megabytes.
		ans["more"] = true
		ans["note"] = fmt.Sprintf("only the first %d instances (by instance name) are listed; read the rest with "+
			"GET /v1/kv/%s?prefix=true (paged)", MaxServiceInstances, prefix)
	}
	return ans, nil
}

// workerInstances lists the alive (including suspect: alive but late)
// workers of the worker registry as instances of corral-worker, with their
// load (http_workers.go's view).
func (s *Server) workerInstances() []instanceJSON {
	var out []instanceJSON
	for _, wk := range s.workers.Workers(time.Now()).Workers {
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

// MaxLeaseList bounds one page of GET /v1/leases.
const MaxLeaseList = 10000

// handleLeaseList is GET /v1/leases[?after=ID&limit=N]: the live leases by
// id from the replicated state (no remaining time: only the leader knows
// it, GET /v1/leases/{id} gives it), at most limit (default and maximum
// MaxLeaseList) per page; "more" says to ask again with after= the last id.
func (s *Server) handleLeaseList(_ http.ResponseWriter, r *http.Request) (any, error) {
	after, _, err := queryInt(r, "after")
	if err != nil {
		return nil, err
	}
	limit, ok, err := queryInt(r, "limit")
	if err != nil {
		return nil, err
	}
	if !ok || limit == 0 {
		limit = MaxLeaseList
	}
	if limit < 0 || limit > MaxLeaseList || after < 0 {
		return nil, badRequest("limit must be 1 to %d and after a lease id, got limit %d after %d", MaxLeaseList, limit, after)
	}
	if err := s.readable(r); err != nil {
		return nil, err
	}
	st := s.store.State()
	ls, more := st.Leases(after, int(limit))
	out := make([]leaseJSON, len(ls))
	for i, l := range ls {
		out[i] = leaseOut(l.ID, l.TTLMS)
		out[i].Keys, out[i].Locks = l.Keys, l.Locks
	}
	return map[string]any{"leases": out, "more": more, "revision": st.Revision()}, nil
}
