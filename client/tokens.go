package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// Join token errors, matched with errors.Is.
var (
	// ErrTokenNotFound: no join token has that id (HTTP 404, code "token_not_found").
	ErrTokenNotFound = errors.New("join token not found")
	// ErrTooManyTokens: the cluster keeps as many join tokens as it may (HTTP 409, code "too_many_tokens").
	ErrTooManyTokens = errors.New("too many join tokens")
)

func init() {
	codeSentinels["token_not_found"] = ErrTokenNotFound
	codeSentinels["too_many_tokens"] = ErrTooManyTokens
}

// JoinToken is a worker join token as the API shows it: never its secret.
type JoinToken struct {
	ID       string `json:"id"`
	Role     string `json:"role"`
	Uses     int    `json:"uses"`
	UsesLeft int    `json:"uses_left"`
	// State is live, expired or used_up.
	State string `json:"state"`
	// CreatedAt, ExpiresAt and LastUsedAt are RFC 3339 (LastUsedAt empty until used).
	CreatedAt  string `json:"created_at"`
	ExpiresAt  string `json:"expires_at"`
	LastUsedAt string `json:"last_used_at,omitempty"`
	LastWorker string `json:"last_worker,omitempty"`
}

// NewJoinToken is a token just created, with the string a worker joins with
// (corral run --join-token). Only this answer ever carries it.
type NewJoinToken struct {
	JoinToken
	Token string `json:"token"`
}

// CreateJoinToken makes a token that admits uses workers of role ("worker")
// for ttl: each trades it, once, for a certificate from a controller that
// holds the cluster CA. A zero ttl or uses takes the server's default (1h,
// 1 use).
func (c *Client) CreateJoinToken(ctx context.Context, role string, ttl time.Duration, uses int) (NewJoinToken, error) {
	body := map[string]any{"role": role}
	if ttl != 0 {
		body["ttl"] = ttl.String()
	}
	if uses != 0 {
		body["uses"] = uses
	}
	var out NewJoinToken
	if err := c.do(ctx, call{method: http.MethodPost, path: "/v1/tokens", body: jsonBody(body)}, &out); err != nil {
		return NewJoinToken{}, err
	}
	return out, nil
}

// JoinTokens lists the tokens the cluster keeps, oldest first: live ones and
// those expired or used up in the last day.
func (c *Client) JoinTokens(ctx context.Context) ([]JoinToken, error) {
	var out struct {
		Tokens []JoinToken `json:"tokens"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/tokens"}, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// RevokeJoinToken deletes a token: it admits no one from now on (a
// certificate already issued with it stays valid; revoke that with
// RevokeCert). ErrTokenNotFound if there is no such token.
func (c *Client) RevokeJoinToken(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: "/v1/tokens/" + url.PathEscape(id)}, nil)
}
