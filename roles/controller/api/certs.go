package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// registerCertRoutes serves the certificate deny-list.
func (s *Server) registerCertRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/certs/revoke", s.handle(s.handleCertRevoke))
	mux.HandleFunc("GET /v1/certs/revoked", s.handle(s.handleCertRevoked))
}

// handleCertRevoke is POST /v1/certs/revoke {"serial": HEX} or {"worker":
// ID}, with an optional "reason". Every controller refuses the certificate
// from its next handshake and closes its connections once the entry is
// applied there.
func (s *Server) handleCertRevoke(_ http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		return nil, badRequest("read body: %v", err)
	}
	var req metadata.RevokeRequest
	if err := decodeStrict(bytes.NewReader(body), &req); err != nil {
		return nil, badRequest(`body must be {"serial": "HEX"} or {"worker": "ID"}, with an optional "reason": %v`, err)
	}
	if req.AtMS != 0 {
		return nil, badRequest(`"at_ms" is set by the controller; leave it out`)
	}
	if req.Serial != "" {
		n, err := metadata.NormalizeSerial(req.Serial)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		req.Serial = n
	}
	if err := req.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	req.AtMS = time.Now().UnixMilli()
	_, err = s.store.ProposePayload(r.Context(), metadata.OpCertRevoke, req)
	if errors.Is(err, metadata.ErrTooManyRevocations) {
		return nil, httpError(http.StatusConflict, "deny_list_full",
			"the deny-list holds %d entries, its limit: make a new CA for the cluster, re-issue every node and start a fresh list", metadata.MaxRevocations)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"revoked": req}, nil
}

// handleCertRevoked is GET /v1/certs/revoked: the deny-list.
func (s *Server) handleCertRevoked(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	return map[string]any{"revoked": s.store.State().Revocations()}, nil
}
