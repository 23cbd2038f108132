package api

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// Join token defaults, when POST /v1/tokens leaves them out.
const (
	defaultTokenTTL  = time.Hour
	defaultTokenUses = 1
)

// registerTokenRoutes serves the worker join tokens.
func (s *Server) registerTokenRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/tokens", s.handle(s.handleTokenCreate))
	mux.HandleFunc("GET /v1/tokens", s.handle(s.handleTokenList))
	mux.HandleFunc("DELETE /v1/tokens/{id}", s.handle(s.handleTokenRevoke))
}

// tokenJSON is a join token as the API shows it: never its secret.
type tokenJSON struct {
	ID       string `json:"id"`
	Role     string `json:"role"`
	Uses     int    `json:"uses"`
	UsesLeft int    `json:"uses_left"`
	// State is live, expired or used_up (at the answering controller's clock).
	State      string `json:"state"`
	CreatedAt  string `json:"created_at"`
	ExpiresAt  string `json:"expires_at"`
	LastUsedAt string `json:"last_used_at,omitempty"`
	LastWorker string `json:"last_worker,omitempty"`
}

func tokenOut(t metadata.JoinTokenInfo, now time.Time) tokenJSON {
	out := tokenJSON{ID: t.ID, Role: t.Role, Uses: t.Uses, UsesLeft: t.UsesLeft, State: "live",
		CreatedAt: rfc3339MS(t.CreatedAtMS), ExpiresAt: rfc3339MS(t.ExpiresAtMS), LastWorker: t.LastWorker}
	switch {
	case t.UsesLeft == 0:
		out.State = "used_up"
	case t.ExpiresAtMS <= now.UnixMilli():
		out.State = "expired"
	}
	if t.LastUsedAtMS != 0 {
		out.LastUsedAt = rfc3339MS(t.LastUsedAtMS)
	}
	return out
}

func rfc3339MS(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// handleTokenCreate is POST /v1/tokens {"role": "worker", "ttl": "1h",
// "uses": 1}: a new join token. Its secret is in this answer only; the
// state keeps its SHA-256.
func (s *Server) handleTokenCreate(w http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		return nil, badRequest("read body: %v", err)
	}
	var in struct {
		Role string `json:"role"`
		TTL  string `json:"ttl"`
		Uses *int   `json:"uses"`
	}
	if err := decodeStrict(bytes.NewReader(body), &in); err != nil {
		return nil, badRequest(`body must be {"role": "worker", "ttl": "1h", "uses": 1}: %v`, err)
	}
	ttl, uses := defaultTokenTTL, defaultTokenUses
	if in.TTL != "" {
		if ttl, err = time.ParseDuration(in.TTL); err != nil {
			return nil, badRequest("ttl %q is not a duration like \"1h\": %v", in.TTL, err)
		}
	}
	if in.Uses != nil {
		uses = *in.Uses
	}
	if err := metadata.ValidateJoinTokenParams(in.Role, ttl, uses); err != nil {
		return nil, badRequest("%v", err)
	}
	id, secret := make([]byte, metadata.JoinTokenIDBytes), make([]byte, metadata.JoinTokenSecretBytes)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("make a join token: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("make a join token: %w", err)
	}
	now := time.Now()
	req := metadata.JoinTokenCreate{ID: hex.EncodeToString(id), SecretSHA256: metadata.JoinTokenSecretHash(secret),
		Role: in.Role, Uses: uses, AtMS: now.UnixMilli(), ExpiresAtMS: now.UnixMilli() + ttl.Milliseconds()}
	_, err = s.store.ProposePayload(r.Context(), metadata.OpJoinTokenCreate, req)
	if errors.Is(err, metadata.ErrTooManyJoinTokens) {
		return nil, httpError(http.StatusConflict, "too_many_tokens",
			"%d join tokens are live, the limit: revoke some with 'corral token revoke ID' or wait for them to expire", metadata.MaxJoinTokens)
	}
	if err != nil {
		return nil, err
	}
	w.Header().Set("Cache-Control", "no-store") // the secret
	out := struct {
		tokenJSON
		Token string `json:"token"`
	}{
		tokenJSON: tokenOut(metadata.JoinTokenInfo{ID: req.ID, Role: req.Role, Uses: uses, UsesLeft: uses,
			CreatedAtMS: req.AtMS, ExpiresAtMS: req.ExpiresAtMS}, now),
		Token: metadata.FormatJoinToken(req.ID, secret),
	}
	return created(out), nil
}

// handleTokenList is GET /v1/tokens: the tokens kept, oldest first, live
// or recently dead; never their secrets.
func (s *Server) handleTokenList(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	now := time.Now()
	list := s.store.State().JoinTokens()
	out := make([]tokenJSON, 0, len(list))
	for _, t := range list {
		out = append(out, tokenOut(t, now))
	}
	return map[string]any{"tokens": out}, nil
}

// handleTokenRevoke is DELETE /v1/tokens/{id}: the token admits no one
// from now on.
func (s *Server) handleTokenRevoke(_ http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := metadata.ValidateJoinTokenID(id); err != nil {
		return nil, badRequest("%v", err)
	}
	_, err := s.store.ProposePayload(r.Context(), metadata.OpJoinTokenRevoke,
		metadata.JoinTokenRevoke{ID: id, AtMS: time.Now().UnixMilli()})
	if errors.Is(err, metadata.ErrJoinTokenUnknown) {
		return nil, notFound("token_not_found", "no join token %s; list them with 'corral token list'", id)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"revoked": id}, nil
}
