package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// ACL errors, matched with errors.Is.
var (
	// ErrACLBootstrapped: the cluster's ACLs were bootstrapped already (HTTP 409, code "acl_bootstrapped").
	ErrACLBootstrapped = errors.New("ACLs are bootstrapped already")
	// ErrPolicyNotFound: no ACL policy has that name (HTTP 404, code "policy_not_found").
	ErrPolicyNotFound = errors.New("ACL policy not found")
	// ErrACLTokenNotFound: no ACL token has that accessor id (HTTP 404, code "token_not_found").
	ErrACLTokenNotFound = ErrTokenNotFound
)

func init() {
	codeSentinels["acl_bootstrapped"] = ErrACLBootstrapped
	codeSentinels["policy_not_found"] = ErrPolicyNotFound
}

// ACLRule grants Access ("read" or "write"; write includes read) on
// Resource ("kv", "coord", "jobs", "workers" or "operator") for every name
// starting with Prefix (kv, coord and jobs only; "" is every name).
type ACLRule struct {
	Resource string `json:"resource"`
	Prefix   string `json:"prefix,omitempty"`
	Access   string `json:"access"`
}

// ACLPolicy is a named set of rules.
type ACLPolicy struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Rules       []ACLRule `json:"rules"`
}

// ACLToken is an API token as the API shows it. Secret is set only in the
// answer that created the token: the cluster keeps its hash.
type ACLToken struct {
	AccessorID string   `json:"accessor_id"`
	Name       string   `json:"name"`
	Type       string   `json:"type"` // client or management
	Policies   []string `json:"policies,omitempty"`
	CreatedAt  string   `json:"created_at,omitempty"`
	ExpiresAt  string   `json:"expires_at,omitempty"`
	Secret     string   `json:"secret,omitempty"`
}

// ACLSelf is who a token is and what it may do (GET /v1/acl/token/self).
type ACLSelf struct {
	// ACLEnabled is false while the cluster takes requests without a
	// token (never bootstrapped, no --api-token-file).
	ACLEnabled bool      `json:"acl_enabled"`
	AccessorID string    `json:"accessor_id"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	Policies   []string  `json:"policies,omitempty"`
	Rules      []ACLRule `json:"rules,omitempty"`
	ExpiresAt  string    `json:"expires_at,omitempty"`
}

// ACLBootstrap creates the cluster's first management token, once; from
// then on every request needs a token. ErrACLBootstrapped the second time.
func (c *Client) ACLBootstrap(ctx context.Context) (ACLToken, error) {
	var out ACLToken
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/acl/bootstrap", body: jsonBody(map[string]any{})}, &out)
	return out, err
}

// PutACLPolicy creates or replaces a policy; tokens naming it change at once.
func (c *Client) PutACLPolicy(ctx context.Context, p ACLPolicy) error {
	body := map[string]any{"description": p.Description, "rules": p.Rules}
	return c.do(ctx, call{method: http.MethodPut, path: "/v1/acl/policies/" + url.PathEscape(p.Name), body: jsonBody(body)}, nil)
}

// ACLPolicies lists the policies by name.
func (c *Client) ACLPolicies(ctx context.Context) ([]ACLPolicy, error) {
	var out struct {
		Policies []ACLPolicy `json:"policies"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/acl/policies"}, &out)
	return out.Policies, err
}

// DeleteACLPolicy deletes a policy: tokens naming it lose its grants.
func (c *Client) DeleteACLPolicy(ctx context.Context, name string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: "/v1/acl/policies/" + url.PathEscape(name)}, nil)
}

// CreateACLToken makes a token: typ "client" with policies, or
// "management" (everything, no policies). ttl 0 never expires. The answer
// carries the secret, once.
func (c *Client) CreateACLToken(ctx context.Context, name, typ string, policies []string, ttl time.Duration) (ACLToken, error) {
	body := map[string]any{"name": name, "type": typ, "policies": policies}
	if ttl != 0 {
		body["ttl"] = ttl.String()
	}
	var out ACLToken
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/acl/tokens", body: jsonBody(body)}, &out)
	return out, err
}

// ACLTokens lists the tokens, oldest first, without their secrets.
func (c *Client) ACLTokens(ctx context.Context) ([]ACLToken, error) {
	var out struct {
		Tokens []ACLToken `json:"tokens"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/acl/tokens"}, &out)
	return out.Tokens, err
}

// DeleteACLToken deletes a token by accessor id: it is refused from now on.
func (c *Client) DeleteACLToken(ctx context.Context, accessorID string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: "/v1/acl/tokens/" + url.PathEscape(accessorID)}, nil)
}

// ACLTokenSelf says who the client's token is and what it may do.
func (c *Client) ACLTokenSelf(ctx context.Context) (ACLSelf, error) {
	var out ACLSelf
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/acl/token/self"}, &out)
	return out, err
}
