package api

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

func (s *Server) registerCoordRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/leases", s.handleLeaseGrant)
	mux.HandleFunc("POST /v1/leases/keepalive", s.leaderOnly(s.handleKeepAliveBatch))
	mux.HandleFunc("POST /v1/leases/keepalive/stream", s.handleKeepAliveStream)
	mux.HandleFunc("POST /v1/leases/{id}/keepalive", s.leaderOnly(s.handleKeepAlive))
	mux.HandleFunc("GET /v1/leases/{id}", s.leaderOnly(s.handleLeaseGet))
	mux.HandleFunc("DELETE /v1/leases/{id}", s.handleLeaseRevoke)
	mux.HandleFunc("GET /v1/watch/{prefix...}", s.handleWatch)
	mux.HandleFunc("POST /v1/locks/{name}", s.handleLockAcquire(lockPrefix))
	mux.HandleFunc("DELETE /v1/locks/{name}", s.handleLockRelease(lockPrefix))
	mux.HandleFunc("GET /v1/locks/{name}", s.handleLockGet(lockPrefix))
	mux.HandleFunc("POST /v1/elections/{name}/campaign", s.handleLockAcquire(electionPrefix))
	mux.HandleFunc("POST /v1/elections/{name}/resign", s.handleLockRelease(electionPrefix))
	mux.HandleFunc("GET /v1/elections/{name}", s.handleLockGet(electionPrefix))
	mux.HandleFunc("PUT /v1/services/{name}/{instance}", s.handleServicePut)
	mux.HandleFunc("DELETE /v1/services/{name}/{instance}", s.handleServiceDelete)
	mux.HandleFunc("GET /v1/services/{name}", s.handleServiceList)
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
	res, err := s.store.Propose(ctx, cmd)
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

// leasesOut renders the leases a keep-alive found alive.
func leasesOut(alive []LeaseTTL) []leaseJSON {
	out := make([]leaseJSON, 0, len(alive))
	for _, l := range alive {
		out = append(out, leaseOut(l.ID, l.TTLMS))
	}
	return out
}

func leaseOut(id, ttlMS int64) leaseJSON {
	return leaseJSON{ID: id, TTLMS: ttlMS, TTL: (time.Duration(ttlMS) * time.Millisecond).String()}
}

func (s *Server) handleLeaseGrant(w http.ResponseWriter, r *http.Request) {
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
	res, err := s.proposeCoord(r.Context(), metadata.OpLeaseGrant, "", metadata.LeaseGrantPayload{TTLMS: ttl.Milliseconds()})
	if err != nil {
		writeError(w, err)
		return
	}
	g := res.Out.(metadata.LeaseGrant)
	writeJSON(w, http.StatusOK, leaseOut(g.ID, g.TTLMS))
}

func (s *Server) handleLeaseRevoke(w http.ResponseWriter, r *http.Request) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := s.proposeCoord(r.Context(), metadata.OpLeaseRevoke, "", metadata.LeaseRevokePayload{IDs: []int64{id}})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision, "deleted": res.Deleted})
}

func (s *Server) handleKeepAlive(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		writeError(w, err)
		return
	}
	alive, _, err := s.coord.KeepAlive(r.Context(), []int64{id})
	if err != nil {
		writeError(w, err)
		return
	}
	if len(alive) == 0 {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: "lease_not_found",
			Message: fmt.Sprintf("lease %d not found (expired or revoked)", id)})
		return
	}
	writeJSON(w, http.StatusOK, leaseOut(alive[0].ID, alive[0].TTLMS))
}

func (s *Server) handleKeepAliveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
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
	alive, missing, err := s.coord.KeepAlive(r.Context(), in.IDs)
	if err != nil {
		writeError(w, err)
		return
	}

	if missing == nil {
		missing = []int64{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"leases": leasesOut(alive), "not_found": missing})
}

func (s *Server) handleLeaseGet(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := parseLeaseID(r.PathValue("id"), "lease id")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.store.LinearizableRead(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	l, ok := s.store.State().Lease(id)
	if !ok {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: "lease_not_found",
			Message: fmt.Sprintf("lease %d not found (expired or revoked)", id)})
		return
	}
	out := leaseOut(id, l.TTLMS)
	out.Keys, out.Locks = l.Keys, l.Locks
	if rem, ok := s.coord.LeaseRemaining(id, time.Duration(l.TTLMS)*time.Millisecond); ok {
		ms := rem.Milliseconds()
		out.RemainingMS = &ms
	}
	writeJSON(w, http.StatusOK, out)
}

// handlePutLease is PUT /v1/kv/{key}?lease=ID (handlePut hands it over).
func (s *Server) handlePutLease(w http.ResponseWriter, r *http.Request) {
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
	res, err := s.store.Propose(r.Context(), cmd)
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
func (s *Server) handleLockAcquire(prefix string) http.HandlerFunc {
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
		res, err := s.proposeCoord(r.Context(), metadata.OpLockAcquire, key, metadata.LockPayload{Lease: lease, Owner: owner, NoWait: wait == 0})
		if err != nil {
			writeError(w, err)
			return
		}
		st := res.Out.(metadata.LockStatus)
		if !st.Held && wait > 0 {
			st, err = s.coord.AwaitLock(r.Context(), key, lease, wait)
			if err != nil {
				writeError(w, coordError(err))
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

func (s *Server) handleLockRelease(prefix string) http.HandlerFunc {
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
		res, err := s.proposeCoord(r.Context(), metadata.OpLockRelease, prefix+name, metadata.LockPayload{Lease: lease})
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
func (s *Server) handleLockGet(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if err := validName(name, "name"); err != nil {
			writeError(w, err)
			return
		}
		if err := s.store.LinearizableRead(r.Context()); err != nil {
			writeError(w, err)
			return
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

func (s *Server) handleServicePut(w http.ResponseWriter, r *http.Request) {
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
	res, err := s.proposeCoord(r.Context(), metadata.OpPutLease, servicePrefix+name+"/"+inst,
		metadata.PutLeasePayload{Value: val, Lease: lease, System: true})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision})
}

func (s *Server) handleServiceDelete(w http.ResponseWriter, r *http.Request) {
	name, inst := r.PathValue("name"), r.PathValue("instance")
	for _, v := range [][2]string{{name, "service name"}, {inst, "instance"}} {
		if err := validName(v[0], v[1]); err != nil {
			writeError(w, err)
			return
		}
	}
	res, err := s.proposeCoord(r.Context(), metadata.OpDeleteSystem, servicePrefix+name+"/"+inst, struct{}{})
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
	Worker *WorkerInfo `json:"worker,omitempty"`
}

func (s *Server) handleServiceList(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := validName(name, "service name"); err != nil {
		writeError(w, err)
		return
	}
	if name == WorkerService && !s.cluster.IsLeader() && r.Header.Get(forwardedHeader) == "" {
		// Worker load is known only to the leader.
		s.forwardToLeader(w, r, nil)
		return
	}
	if err := s.store.LinearizableRead(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	st := s.store.State()
	out := []instanceJSON{}
	prefix := servicePrefix + name + "/"
	for _, kv := range st.Range(prefix, 0) {
		var si ServiceInstance
		_ = json.Unmarshal(kv.Value, &si)
		out = append(out, instanceJSON{Instance: strings.TrimPrefix(kv.Key, prefix), Address: si.Address,
			Metadata: si.Metadata, Lease: st.KeyLease(kv.Key), ModRevision: kv.ModRevision})
	}
	if name == WorkerService {
		out = append(out, s.workerInstances()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"service": name, "instances": out, "revision": st.Revision()})
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
