package api

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// Access control (docs/SECURITY.md, "Permissions"). Every route has an
// entry in routePerms; auth resolves the request's token to an identity
// (metadata.ACLIdentity) and checks the route's permission before any
// handler runs. Handlers that learn the name only from the body or the
// state (a job spec, an allocation's job) check it again with allow.
//
// ACLs are on once the cluster is bootstrapped ('corral acl bootstrap')
// or --api-token-file is set; the file's token is a management token.
// Without either (a loopback-only API), every caller is management.

// routeMux is a ServeMux whose every route checks its permission
// (routePerms) once the mux has matched it, so the check sees the path's
// values, and that remembers its patterns, so a test can show that every
// route has a permission.
type routeMux struct {
	*http.ServeMux
	s        *Server
	patterns []string
}

func (s *Server) newRouteMux() *routeMux { return &routeMux{ServeMux: http.NewServeMux(), s: s} }

// HandleFunc registers h for pattern, behind its permission.
func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// Handle registers h for pattern, behind its permission.
func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	p, known := routePerms[pattern]
	if !known {
		p = management // fail closed: a route nobody gave a permission
	}
	if p.kind == permOpen {
		m.ServeMux.Handle(pattern, h)
		return
	}
	m.ServeMux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := r.Context().Value(identityKey{}).(*metadata.ACLIdentity)
		if !ok { // an open path auth let through
			j, err := m.s.identify(r)
			if err != nil {
				writeError(w, err)
				return
			}
			id, r = j.id, r.WithContext(j.into(r.Context()))
		}
		if err := p.check(id, r); err != nil {
			nj, granted := m.s.grantedAfterCatchUp(r, func(id *metadata.ACLIdentity) bool { return p.check(id, r) == nil })
			if !granted {
				writeError(w, err)
				return
			}
			r = r.WithContext(nj.into(r.Context()))
		}
		h.ServeHTTP(w, r)
	}))
}

type permKind int

const (
	// permOpen: probes, metrics (metrics_http.go checks its own token) and
	// the dashboard's static files.
	permOpen permKind = iota
	// permAuthenticated: any valid token.
	permAuthenticated
	// permManagement: a management token.
	permManagement
	// permResource: res and acc on the name from the path (or, without a
	// name function, on some name: the handler checks the real one).
	permResource
)

type routePerm struct {
	kind permKind
	res  metadata.ACLResource
	acc  metadata.ACLAccess
	// name returns the name the permission is for; nil means "some name"
	// (AllowsAny), and the handler checks the name it learns.
	name func(*http.Request) string
}

func pathValue(v string) func(*http.Request) string {
	return func(r *http.Request) string { return r.PathValue(v) }
}

func resource(res metadata.ACLResource, acc metadata.ACLAccess, name func(*http.Request) string) routePerm {
	return routePerm{kind: permResource, res: res, acc: acc, name: name}
}

var (
	open          = routePerm{kind: permOpen}
	authenticated = routePerm{kind: permAuthenticated}
	management    = routePerm{kind: permManagement}
	kvRead        = resource(metadata.ACLKV, metadata.ACLRead, pathValue("key"))
	kvWrite       = resource(metadata.ACLKV, metadata.ACLWrite, pathValue("key"))
	coordReadAny  = resource(metadata.ACLCoord, metadata.ACLRead, nil)
	coordWriteAny = resource(metadata.ACLCoord, metadata.ACLWrite, nil)
	coordRead     = resource(metadata.ACLCoord, metadata.ACLRead, pathValue("name"))
	coordWrite    = resource(metadata.ACLCoord, metadata.ACLWrite, pathValue("name"))
	jobsReadAny   = resource(metadata.ACLJobs, metadata.ACLRead, nil)
	jobsWriteAny  = resource(metadata.ACLJobs, metadata.ACLWrite, nil)
	jobsRead      = resource(metadata.ACLJobs, metadata.ACLRead, pathValue("name"))
	jobsWrite     = resource(metadata.ACLJobs, metadata.ACLWrite, pathValue("name"))
	workersRead   = resource(metadata.ACLWorkers, metadata.ACLRead, noName)
	workersWrite  = resource(metadata.ACLWorkers, metadata.ACLWrite, noName)
	operatorRead  = resource(metadata.ACLOperator, metadata.ACLRead, noName)
	operatorWrite = resource(metadata.ACLOperator, metadata.ACLWrite, noName)
)

func noName(*http.Request) string { return "" }

// routePerms is the permission of every route (docs/API.md lists them).
// A route missing here is refused to everyone but management tokens.
var routePerms = map[string]routePerm{
	"GET /healthz":    open,
	"GET /readyz":     open,
	"GET /metrics":    open,
	"GET /ui/":        open,
	"GET /{$}":        open,
	"/":               authenticated, // the JSON 404
	"GET /v1/cluster": authenticated,
	"GET /v1/events":  authenticated,

	"PUT /v1/kv/{key...}":       kvWrite,
	"GET /v1/kv/{key...}":       kvRead,
	"DELETE /v1/kv/{key...}":    kvWrite,
	"GET /v1/kvstream":          authenticated, // each frame is checked against its key (kvstream.go)
	"GET /v1/watch/{prefix...}": resource(metadata.ACLKV, metadata.ACLRead, pathValue("prefix")),

	"POST /v1/leases":                       coordWriteAny,
	"POST /v1/leases/keepalive":             coordWriteAny,
	"POST /v1/leases/keepalive/stream":      coordWriteAny,
	"POST /v1/leases/{id}/keepalive":        coordWriteAny,
	"GET /v1/leases/{id}":                   coordReadAny,
	"GET /v1/leases":                        coordReadAny,
	"DELETE /v1/leases/{id}":                coordWriteAny, // and owner or coord write on "" (handleLeaseRevoke)
	"POST /v1/locks/{name}":                 coordWrite,
	"DELETE /v1/locks/{name}":               coordWrite,
	"GET /v1/locks/{name}":                  coordRead,
	"POST /v1/elections/{name}/campaign":    coordWrite,
	"POST /v1/elections/{name}/resign":      coordWrite,
	"GET /v1/elections/{name}":              coordRead,
	"PUT /v1/services/{name}/{instance}":    coordWrite,
	"DELETE /v1/services/{name}/{instance}": coordWrite,
	"GET /v1/services/{name}":               coordRead,

	"POST /v1/jobs":                     jobsWriteAny, // the spec's name: handleJobSubmit
	"GET /v1/jobs":                      jobsReadAny,  // filtered by name
	"GET /v1/jobs/{name}":               jobsRead,
	"DELETE /v1/jobs/{name}":            jobsWrite,
	"GET /v1/allocations":               jobsReadAny, // filtered by job
	"GET /v1/allocations/{id}":          jobsReadAny, // the allocation's job: allowAlloc
	"GET /v1/allocations/{id}/logs":     jobsReadAny,
	"POST /v1/allocations/{id}/restart": jobsWriteAny,
	"GET /v1/workers":                   workersRead,
	"GET /v1/workers/{id}":              workersRead,
	"POST /v1/workers/{id}/drain":       workersWrite,

	"GET /v1/controllers":                       operatorRead,
	"POST /v1/controllers":                      operatorWrite,
	"DELETE /v1/controllers/{id}":               operatorWrite,
	"POST /v1/controllers/{id}/transfer-leader": operatorWrite,
	"GET /v1/snapshot":                          operatorWrite, // every key and value
	"POST /v1/certs/revoke":                     operatorWrite,
	"GET /v1/certs/revoked":                     operatorRead,
	"POST /v1/tokens":                           operatorWrite,
	"GET /v1/tokens":                            operatorRead,
	"DELETE /v1/tokens/{id}":                    operatorWrite,
	"GET /debug/pprof/":                         operatorRead,
	"GET /debug/pprof/cmdline":                  operatorRead,
	"GET /debug/pprof/profile":                  operatorRead,
	"GET /debug/pprof/symbol":                   operatorRead,
	"GET /debug/pprof/trace":                    operatorRead,
	"GET /v1/znodes":                            operatorRead, // and world:anyone READ for data and children (znodes.go)

	"POST /v1/acl/bootstrap":           management,
	"GET /v1/acl/policies":             management,
	"GET /v1/acl/policies/{name}":      management,
	"PUT /v1/acl/policies/{name}":      management,
	"DELETE /v1/acl/policies/{name}":   management,
	"POST /v1/acl/tokens":              management,
	"GET /v1/acl/tokens":               management,
	"GET /v1/acl/tokens/{accessor}":    management,
	"DELETE /v1/acl/tokens/{accessor}": management,
	"GET /v1/acl/token/self":           authenticated,
}

// Identities of callers without a replicated token.
var (
	// anonymousIdentity is every caller while ACLs are off.
	anonymousIdentity = &metadata.ACLIdentity{AccessorID: "anonymous", Name: "anonymous", Type: metadata.ACLTypeManagement}
	// fileIdentity is the --api-token-file token.
	fileIdentity = &metadata.ACLIdentity{AccessorID: "api-token-file", Name: "api-token-file", Type: metadata.ACLTypeManagement}
)

type identityKey struct{}

// identity is the caller auth resolved (anonymous when none ran: the
// API's unit tests call handlers directly).
func identity(r *http.Request) *metadata.ACLIdentity {
	if id, ok := r.Context().Value(identityKey{}).(*metadata.ACLIdentity); ok {
		return id
	}
	return anonymousIdentity
}

// judged is a caller as identify resolved it: its identity and, when
// the replicated ACLs decided it, the ACL revision they were at.
type judged struct {
	id *metadata.ACLIdentity
	// rev is the ACL revision id was resolved at; fence is false for the
	// --api-token-file token, which the replicated ACLs do not govern.
	rev   uint64
	fence bool
}

// into returns ctx carrying the caller (auth sets it) and, when the
// replicated ACLs judged it, their revision: every command proposed for
// the request is then fenced with it (metadata.WithACLFence), so a write
// judged on a follower that had not yet applied an ACL change is refused
// at apply instead of taking effect ("A change's window on a follower",
// docs/SECURITY.md).
func (j judged) into(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, identityKey{}, j.id)
	if j.fence {
		ctx = metadata.WithACLFence(ctx, j.rev)
	}
	return ctx
}

// aclEnabled reports whether requests need a token.
func (s *Server) aclEnabled() bool {
	return s.token != nil || s.store.State().ACL().Bootstrapped
}

// aclCatchUpTimeout bounds the linearizable read a request waits for
// while this controller has not yet caught up with the ACLs (aclCurrent).
const aclCatchUpTimeout = 2 * time.Second

// aclCurrent makes sure this controller's ACL state holds every ACL change
// committed before it started, before it decides anything with it. Right
// after a restart the state is the last snapshot and the log is still
// being applied: a cluster bootstrapped after that snapshot would look
// open (every caller management), and a token deleted after it would
// still work. One linearizable read (ReadIndex) after start closes the
// gap; until it succeeds, requests are refused with the read's error
// (503 no_leader or timeout).
func (s *Server) aclCurrent(r *http.Request) error {
	if s.aclCaughtUp.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), aclCatchUpTimeout)
	defer cancel()
	if err := s.store.LinearizableRead(ctx); err != nil {
		// Keep the read's own status and code (no_leader, timeout): they
		// say what is wrong and whether to retry.
		ae := *errorFor(err)
		ae.Message = "this controller has not yet caught up with the cluster's access control state: " + ae.Message
		return &ae
	}
	s.aclCaughtUp.Store(true)
	return nil
}

// catchUpBeforeRefusing waits for a linearizable read before a refusal
// is answered: a token or a grant made a moment ago may not be applied on
// this controller yet (a follower lags the leader by the replication
// delay), and a client that just made one and uses it at once must not
// be refused for that. It reports whether the state is now current; when
// not, the refusal stands. Only refusals pay for it.
func (s *Server) catchUpBeforeRefusing(r *http.Request) bool {
	ctx, cancel := context.WithTimeout(r.Context(), aclCatchUpTimeout)
	defer cancel()
	return s.store.LinearizableRead(ctx) == nil
}

// grantedAfterCatchUp is the second look before a 403: perhaps a grant
// this controller has not applied yet. After catchUpBeforeRefusing it
// identifies the caller again and returns that identity if ok accepts
// it, or false when the refusal stands.
func (s *Server) grantedAfterCatchUp(r *http.Request, ok func(*metadata.ACLIdentity) bool) (judged, bool) {
	if !s.catchUpBeforeRefusing(r) {
		return judged{}, false
	}
	j, err := s.identify(r)
	if err != nil || !ok(j.id) {
		return judged{}, false
	}
	return j, true
}

// identify resolves r's bearer token, or returns the 401 to answer.
// Status routes (permAuthenticated: GET /v1/cluster, /v1/events, token
// self) are judged on the local state even before it is known current
// (aclCurrent), so that 'corral status' still answers on a controller cut
// off since its start: they show counts and quorum state, no data.
func (s *Server) identify(r *http.Request) (judged, error) {
	got, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if s.token != nil && hasBearer && subtle.ConstantTimeCompare([]byte(got), s.token) == 1 {
		return judged{id: fileIdentity}, nil // management whatever the replicated state says
	}
	if p, ok := routePerms[r.Pattern]; !ok || p.kind != permAuthenticated || r.Pattern == "/" {
		if err := s.aclCurrent(r); err != nil {
			return judged{}, err
		}
	}
	ix := s.store.State().ACL()
	if s.token == nil && !ix.Bootstrapped {
		return judged{id: anonymousIdentity, rev: ix.Revision, fence: true}, nil
	}
	if !hasBearer || got == "" {
		return judged{}, httpError(http.StatusUnauthorized, "unauthorized",
			"missing API token: send Authorization: Bearer <token> (the CLI's --token or CORRAL_TOKEN)")
	}
	id := ix.Lookup(got)
	if id == nil && s.catchUpBeforeRefusing(r) {
		ix = s.store.State().ACL()
		id = ix.Lookup(got) // a token made a moment ago
	}
	if id == nil {
		return judged{}, httpError(http.StatusUnauthorized, "unauthorized",
			"unknown API token: it was deleted, or it is not a token of this cluster; ask an operator for one ('corral acl token create')")
	}
	if id.ExpiresAtMS != 0 && id.ExpiresAtMS <= time.Now().UnixMilli() {
		return judged{}, httpError(http.StatusUnauthorized, "token_expired",
			"API token %s (%s) expired at %s; ask an operator for a new one", id.AccessorID, id.Name, rfc3339MS(id.ExpiresAtMS))
	}
	return judged{id: id, rev: ix.Revision, fence: true}, nil
}

// reauthorize judges r again once a linearizable read has made this
// controller's state current. auth decided on the state as applied when
// the request came in, which on a follower can lag, by the replication
// delay, an ACL change the leader already acknowledged: 'corral acl
// bootstrap', a deleted token, a narrowed policy (CI caught a follower
// still serving an anonymous read right after bootstrap on 2026-12-06).
// etcd checks a linearizable Range's permission after its ReadIndex for
// the same reason. A caller whose grants changed meanwhile but who is
// still allowed gets a retryable 503: the handler would go on with the
// grants it was given (allow).
func (s *Server) reauthorize(r *http.Request) error {
	j, err := s.identify(r)
	if err != nil {
		return err
	}
	id := j.id
	if p, ok := routePerms[r.Pattern]; ok {
		if err := p.check(id, r); err != nil {
			return err
		}
	}
	if old := identity(r); old != id && !reflect.DeepEqual(*old, *id) {
		return httpError(http.StatusServiceUnavailable, "acl_changed",
			"access control changed while this request waited for a linearizable read; retry it")
	}
	return nil
}

// permissionJSON names a missing permission in a 403's body.
type permissionJSON struct {
	Resource metadata.ACLResource `json:"resource"`
	Access   metadata.ACLAccess   `json:"access"`
	Name     *string              `json:"name,omitempty"`
}

// denied is the 403 for id lacking acc on res for name (nil: any name).
func denied(id *metadata.ACLIdentity, res metadata.ACLResource, acc metadata.ACLAccess, name *string) *apiError {
	what := string(res) + ":" + string(acc)
	switch {
	case name != nil && *name != "":
		what += fmt.Sprintf(" on %q", *name)
	case name != nil && (res == metadata.ACLKV || res == metadata.ACLCoord || res == metadata.ACLJobs):
		what += " on every name (prefix \"\")"
	case name == nil:
		what += " on some name"
	}
	return &apiError{Status: http.StatusForbidden, Code: "permission_denied",
		Permission: &permissionJSON{Resource: res, Access: acc, Name: name},
		Message: fmt.Sprintf("permission denied: token %s (%s) lacks %s; ask an operator for a policy that grants it (docs/SECURITY.md, \"Permissions\")",
			id.AccessorID, id.Name, what)}
}

// notManagement is the 403 for a route only management tokens may use.
func notManagement(id *metadata.ACLIdentity) *apiError {
	return &apiError{Status: http.StatusForbidden, Code: "permission_denied",
		Permission: &permissionJSON{Resource: "management"},
		Message: fmt.Sprintf("permission denied: token %s (%s) is not a management token, which this route needs (docs/SECURITY.md, \"Permissions\")",
			id.AccessorID, id.Name)}
}

// check is nil when id may use the route p guards.
func (p routePerm) check(id *metadata.ACLIdentity, r *http.Request) error {
	switch p.kind {
	case permOpen, permAuthenticated:
		return nil
	case permManagement:
		if !id.Management() {
			return notManagement(id)
		}
		return nil
	}
	if p.name == nil {
		if !id.AllowsAny(p.res, p.acc) {
			return denied(id, p.res, p.acc, nil)
		}
		return nil
	}
	name := p.name(r)
	if !id.Allows(p.res, p.acc, name) {
		return denied(id, p.res, p.acc, &name)
	}
	return nil
}

// allow is nil when r's caller may take acc on res for name: handlers
// call it for names they learn after auth ran.
func allow(r *http.Request, res metadata.ACLResource, acc metadata.ACLAccess, name string) error {
	id := identity(r)
	if !id.Allows(res, acc, name) {
		return denied(id, res, acc, &name)
	}
	return nil
}

// auth resolves the caller's token before the mux runs (401s); each
// route then checks its permission (routeMux.Handle, 403s).
func (s *Server) auth(mux *routeMux) http.Handler {
	next := http.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// instrument labels by r.Pattern, which the mux would set only on
		// the copy of r passed on below.
		_, r.Pattern = mux.Handler(r)
		if isOpenPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		j, err := s.identify(r)
		if err != nil {
			writeError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(j.into(r.Context())))
	})
}

// isOpenPath: probes, metrics and the dashboard's static files (the page
// sends the token the user enters with its API calls) need no token.
func isOpenPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/metrics" || p == "/" || p == "/ui" || strings.HasPrefix(p, "/ui/")
}
