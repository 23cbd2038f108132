package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// maxACLBodyBytes bounds a policy or token request.
const maxACLBodyBytes = 64 << 10

// registerACLRoutes serves policies and tokens (docs/API.md, "ACLs").
func (s *Server) registerACLRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/acl/bootstrap", s.handle(s.handleACLBootstrap))
	mux.HandleFunc("GET /v1/acl/policies", s.handle(s.handleACLPolicyList))
	mux.HandleFunc("GET /v1/acl/policies/{name}", s.handle(s.handleACLPolicyGet))
	mux.HandleFunc("PUT /v1/acl/policies/{name}", s.handle(s.handleACLPolicyPut))
	mux.HandleFunc("DELETE /v1/acl/policies/{name}", s.handle(s.handleACLPolicyDelete))
	mux.HandleFunc("POST /v1/acl/tokens", s.handle(s.handleACLTokenCreate))
	mux.HandleFunc("GET /v1/acl/tokens", s.handle(s.handleACLTokenList))
	mux.HandleFunc("GET /v1/acl/tokens/{accessor}", s.handle(s.handleACLTokenGet))
	mux.HandleFunc("DELETE /v1/acl/tokens/{accessor}", s.handle(s.handleACLTokenDelete))
	mux.HandleFunc("GET /v1/acl/token/self", s.handle(s.handleACLTokenSelf))
}

// aclTokenJSON is a token as the API shows it: the secret only in the
// answer that created it.
type aclTokenJSON struct {
	AccessorID string   `json:"accessor_id"`
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Policies   []string `json:"policies,omitempty"`
	CreatedAt  string   `json:"created_at,omitempty"`
	ExpiresAt  string   `json:"expires_at,omitempty"`
	Secret     string   `json:"secret,omitempty"`
}

func aclTokenOut(t metadata.ACLToken) aclTokenJSON {
	out := aclTokenJSON{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type, Policies: t.Policies,
		CreatedAt: rfc3339MS(t.CreatedAtMS)}
	if t.ExpiresAtMS != 0 {
		out.ExpiresAt = rfc3339MS(t.ExpiresAtMS)
	}
	return out
}

// aclError turns the state machine's ACL refusals into answers.
func aclError(err error) error {
	switch {
	case errors.Is(err, metadata.ErrACLBootstrapped):
		return httpError(http.StatusConflict, "acl_bootstrapped", "%v", err)
	case errors.Is(err, metadata.ErrACLNotBootstrapped):
		return httpError(http.StatusConflict, "acl_not_bootstrapped", "%v", err)
	case errors.Is(err, metadata.ErrACLTooMany):
		return httpError(http.StatusConflict, "too_many", "%v; delete unused ones first", err)
	case errors.Is(err, metadata.ErrACLTokenUnknown):
		return notFound("token_not_found", "%v; list tokens with 'corral acl token list'", err)
	case errors.Is(err, metadata.ErrInvalid):
		return badRequest("%v", err)
	}
	return err
}

// newACLToken makes a token with a fresh accessor id and secret; the
// secret is returned to show once.
func newACLToken(name, typ string, policies []string, ttl time.Duration) (metadata.ACLToken, string, error) {
	acc, secret := make([]byte, metadata.ACLAccessorIDBytes), make([]byte, metadata.ACLSecretBytes)
	if _, err := rand.Read(acc); err != nil {
		return metadata.ACLToken{}, "", fmt.Errorf("make an ACL token: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return metadata.ACLToken{}, "", fmt.Errorf("make an ACL token: %w", err)
	}
	str := metadata.FormatACLSecret(secret)
	now := time.Now().UnixMilli()
	t := metadata.ACLToken{AccessorID: hex.EncodeToString(acc), SecretSHA256: metadata.ACLSecretHash(str), Name: name,
		Type: typ, Policies: policies, CreatedAtMS: now}
	if ttl > 0 {
		t.ExpiresAtMS = now + ttl.Milliseconds()
	}
	return t, str, nil
}

// handleACLBootstrap is POST /v1/acl/bootstrap: the first management
// token, once. From then on every request needs a token.
func (s *Server) handleACLBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	if s.store.State().ACL().Bootstrapped {
		return nil, aclError(fmt.Errorf("%w: create more tokens with a management token ('corral acl token create')", metadata.ErrACLBootstrapped))
	}
	t, secret, err := newACLToken(metadata.ACLBootstrapTokenName, metadata.ACLTypeManagement, nil, 0)
	if err != nil {
		return nil, err
	}
	if _, err := s.store.ProposePayload(r.Context(), metadata.OpACLBootstrap, metadata.ACLBootstrap{Token: t}); err != nil {
		return nil, aclError(err)
	}
	s.log.Info("ACLs bootstrapped: every request now needs a token", "accessor_id", t.AccessorID)
	w.Header().Set("Cache-Control", "no-store") // the secret
	out := aclTokenOut(t)
	out.Secret = secret
	return created(out), nil
}

func (s *Server) handleACLPolicyList(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	return map[string]any{"policies": s.store.State().ACLPolicies()}, nil
}

func policyNotFound(name string) *apiError {
	return notFound("policy_not_found", "ACL policy %q not found; list them with 'corral acl policy list'", name)
}

func (s *Server) handleACLPolicyGet(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	p, ok := s.store.State().ACLPolicy(r.PathValue("name"))
	if !ok {
		return nil, policyNotFound(r.PathValue("name"))
	}
	return map[string]any{"policy": p}, nil
}

// handleACLPolicyPut is PUT /v1/acl/policies/{name} {"description": "",
// "rules": [{"resource": "kv", "prefix": "app/", "access": "write"}]}:
// creates or replaces the policy; tokens naming it change at once.
func (s *Server) handleACLPolicyPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var in struct {
		Description string             `json:"description"`
		Rules       []metadata.ACLRule `json:"rules"`
	}
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxACLBodyBytes), &in); err != nil {
		return nil, badRequest(`body must be {"description": "...", "rules": [{"resource": "kv", "prefix": "app/", "access": "read"}]}: %v`, err)
	}
	p := metadata.ACLPolicy{Name: r.PathValue("name"), Description: in.Description, Rules: in.Rules, ModifiedAtMS: time.Now().UnixMilli()}
	if err := p.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	if _, err := s.store.ProposePayload(r.Context(), metadata.OpACLPolicyPut, p); err != nil {
		return nil, aclError(err)
	}
	return map[string]any{"policy": p}, nil
}

func (s *Server) handleACLPolicyDelete(_ http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	_, err := s.store.ProposePayload(r.Context(), metadata.OpACLPolicyDelete, metadata.ACLPolicyDelete{Name: name})
	if errors.Is(err, metadata.ErrACLPolicyUnknown) {
		return nil, policyNotFound(name)
	}
	if err != nil {
		return nil, aclError(err)
	}
	return map[string]any{"deleted": name}, nil
}

// handleACLTokenCreate is POST /v1/acl/tokens {"name": "app",
// "type": "client", "policies": ["app"], "ttl": "720h"}. The secret is in
// this answer only; the state keeps its SHA-256.
func (s *Server) handleACLTokenCreate(w http.ResponseWriter, r *http.Request) (any, error) {
	var in struct {
		Name     string   `json:"name"`
		Type     string   `json:"type"`
		Policies []string `json:"policies"`
		TTL      string   `json:"ttl"`
	}
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxACLBodyBytes), &in); err != nil {
		return nil, badRequest(`body must be {"name": "app", "type": "client", "policies": ["app"], "ttl": "720h"}: %v`, err)
	}
	if in.Type == "" {
		in.Type = metadata.ACLTypeClient
	}
	var ttl time.Duration
	if in.TTL != "" {
		d, err := time.ParseDuration(in.TTL)
		if err != nil || d < time.Minute {
			return nil, badRequest("ttl %q: want a duration of at least 1m, like \"720h\"", in.TTL)
		}
		ttl = d
	}
	t, secret, err := newACLToken(in.Name, in.Type, in.Policies, ttl)
	if err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	_, err = s.store.ProposePayload(r.Context(), metadata.OpACLTokenCreate, t)
	if errors.Is(err, metadata.ErrACLPolicyUnknown) {
		return nil, badRequest("%v", err)
	}
	if err != nil {
		return nil, aclError(err)
	}
	w.Header().Set("Cache-Control", "no-store") // the secret
	out := aclTokenOut(t)
	out.Secret = secret
	return created(out), nil
}

func (s *Server) handleACLTokenList(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	toks := s.store.State().ACLTokens()
	out := make([]aclTokenJSON, len(toks))
	for i, t := range toks {
		out[i] = aclTokenOut(t)
	}
	return map[string]any{"tokens": out}, nil
}

func (s *Server) handleACLTokenGet(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	t, ok := s.store.State().ACLTokenByAccessor(r.PathValue("accessor"))
	if !ok {
		return nil, aclError(fmt.Errorf("%w %q", metadata.ErrACLTokenUnknown, r.PathValue("accessor")))
	}
	return map[string]any{"token": aclTokenOut(t)}, nil
}

func (s *Server) handleACLTokenDelete(_ http.ResponseWriter, r *http.Request) (any, error) {
	acc := r.PathValue("accessor")
	if _, err := s.store.ProposePayload(r.Context(), metadata.OpACLTokenDelete, metadata.ACLTokenDelete{AccessorID: acc}); err != nil {
		return nil, aclError(err)
	}
	return map[string]any{"deleted": acc}, nil
}

// selfJSON is GET /v1/acl/token/self: who the caller is and what it may
// do, so the dashboard can hide what the token cannot take.
type selfJSON struct {
	ACLEnabled bool               `json:"acl_enabled"`
	AccessorID string             `json:"accessor_id"`
	Name       string             `json:"name"`
	Type       string             `json:"type"`
	Policies   []string           `json:"policies,omitempty"`
	Rules      []metadata.ACLRule `json:"rules,omitempty"`
	ExpiresAt  string             `json:"expires_at,omitempty"`
}

func (s *Server) handleACLTokenSelf(_ http.ResponseWriter, r *http.Request) (any, error) {
	id := identity(r)
	out := selfJSON{ACLEnabled: s.aclEnabled(), AccessorID: id.AccessorID, Name: id.Name, Type: id.Type,
		Policies: id.Policies, Rules: id.Rules}
	if id.ExpiresAtMS != 0 {
		out.ExpiresAt = rfc3339MS(id.ExpiresAtMS)
	}
	return out, nil
}
