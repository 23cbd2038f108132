package client

import (
	"context"
	"errors"
	"net/http"
)

// Revocation is one entry of the cluster's certificate deny-list: a
// certificate serial (lower-case hex) or a worker id, every certificate of
// which is refused.
type Revocation struct {
	Serial string `json:"serial,omitempty"`
	Worker string `json:"worker,omitempty"`
	Reason string `json:"reason,omitempty"`
	AtMS   int64  `json:"at_ms"`
}

// RevokeCert adds a certificate serial, or every certificate of a worker, to
// the deny-list: controllers refuse it from their next handshake and close
// its connections. Exactly one of serial and worker must be set.
func (c *Client) RevokeCert(ctx context.Context, serial, worker, reason string) (Revocation, error) {
	if (serial == "") == (worker == "") {
		return Revocation{}, errors.New("client: revoke exactly one of a serial or a worker id")
	}
	var out struct {
		Revoked Revocation `json:"revoked"`
	}
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/certs/revoke",
		body: jsonBody(Revocation{Serial: serial, Worker: worker, Reason: reason})}, &out)
	if err != nil {
		return Revocation{}, err
	}
	return out.Revoked, nil
}

// Revocations returns the certificate deny-list.
func (c *Client) Revocations(ctx context.Context) ([]Revocation, error) {
	var out struct {
		Revoked []Revocation `json:"revoked"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/certs/revoked"}, &out); err != nil {
		return nil, err
	}
	return out.Revoked, nil
}
