package metadata

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ACL ops (70-74): policies grant access to parts of the API by resource
// and name prefix, and tokens carry policies, in the style of Nomad's ACL
// system and etcd's RBAC. Only the SHA-256 of a token's secret is
// replicated; the secret is shown once, to whoever created the token.
const (
	// OpACLBootstrap creates the first management token (ACLBootstrap),
	// once: after it, every API request needs a token.
	OpACLBootstrap Op = 70
	// OpACLPolicyPut creates or replaces a policy (ACLPolicy).
	OpACLPolicyPut Op = 71
	// OpACLPolicyDelete deletes a policy (ACLPolicyDelete).
	OpACLPolicyDelete Op = 72
	// OpACLTokenCreate adds a token (ACLToken).
	OpACLTokenCreate Op = 73
	// OpACLTokenDelete deletes a token (ACLTokenDelete).
	OpACLTokenDelete Op = 74
)

// ACL limits: policies and tokens live in every snapshot and the index
// every request consults.
const (
	MaxACLPolicies     = 1000
	MaxACLTokens       = 10000
	MaxACLRules        = 100
	MaxACLPolicyNames  = 32
	MaxACLPrefixBytes  = 1024
	MaxACLDescription  = 256
	ACLAccessorIDBytes = 8
	ACLSecretBytes     = 32
	ACLTokenPrefix     = "corral-acl-"
	ACLTypeClient      = "client"
	ACLTypeManagement  = "management"
	// ACLBootstrapTokenName names the token OpACLBootstrap creates.
	ACLBootstrapTokenName = "bootstrap"
)

// ACLResource names what a rule grants access to.
type ACLResource string

// The resources a policy rule may name. Kv, coord and jobs take a name
// prefix; workers and operator do not.
const (
	// ACLKV is the key space: keys by prefix, ranges and watches.
	ACLKV ACLResource = "kv"
	// ACLCoord is coordination: leases, locks, elections and services by
	// name prefix (a lease has no name: granting one needs write on some
	// prefix).
	ACLCoord ACLResource = "coord"
	// ACLJobs is jobs and their allocations by job name prefix; write is
	// submit, stop and restart.
	ACLJobs ACLResource = "jobs"
	// ACLWorkers is the worker list; write is drain.
	ACLWorkers ACLResource = "workers"
	// ACLOperator is controllers, snapshots, join tokens, certificates,
	// metrics and profiles.
	ACLOperator ACLResource = "operator"
)

// ACLAccess is read or write; write includes read.
type ACLAccess string

// Access levels.
const (
	ACLRead  ACLAccess = "read"
	ACLWrite ACLAccess = "write"
)

// Refusals of ACL ops, wrapped by Result.Err with details.
var (
	// ErrACLBootstrapped: the cluster was bootstrapped already.
	ErrACLBootstrapped = errors.New("ACLs are bootstrapped already")
	// ErrACLPolicyUnknown: no policy has that name.
	ErrACLPolicyUnknown = errors.New("unknown ACL policy")
	// ErrACLTokenUnknown: no token has that accessor id.
	ErrACLTokenUnknown = errors.New("unknown ACL token")
	// ErrACLNotBootstrapped: a token before the bootstrap token. Tokens
	// mean nothing while ACLs are off, and a state holding tokens but not
	// bootstrapped would be refused by the snapshot check.
	ErrACLNotBootstrapped = errors.New("ACLs are not bootstrapped")
	// ErrACLTooMany: MaxACLPolicies or MaxACLTokens exist.
	ErrACLTooMany = errors.New("too many ACL objects")
)

var (
	aclNamePattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	aclAccessorPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// ACLRule grants Access to Resource for every name starting with Prefix
// (kv, coord and jobs; "" is every name).
type ACLRule struct {
	Resource ACLResource `json:"resource"`
	Prefix   string      `json:"prefix,omitempty"`
	Access   ACLAccess   `json:"access"`
}

// Validate reports why r is not a rule, or nil.
func (r ACLRule) Validate() error {
	switch r.Resource {
	case ACLKV, ACLCoord, ACLJobs:
		if len(r.Prefix) > MaxACLPrefixBytes {
			return fmt.Errorf("%s rule: prefix is %d bytes, more than %d", r.Resource, len(r.Prefix), MaxACLPrefixBytes)
		}
	case ACLWorkers, ACLOperator:
		if r.Prefix != "" {
			return fmt.Errorf("%s rule: takes no prefix (only kv, coord and jobs do)", r.Resource)
		}
	default:
		return fmt.Errorf("rule resource %q: want kv, coord, jobs, workers or operator", r.Resource)
	}
	if r.Access != ACLRead && r.Access != ACLWrite {
		return fmt.Errorf("%s rule: access %q: want read or write", r.Resource, r.Access)
	}
	return nil
}

// grants reports whether r gives acc on res for name.
func (r ACLRule) grants(res ACLResource, acc ACLAccess, name string) bool {
	return r.Resource == res && (r.Access == ACLWrite || acc == ACLRead) && strings.HasPrefix(name, r.Prefix)
}

// ACLPolicy is a named set of rules; the payload of OpACLPolicyPut.
type ACLPolicy struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Rules       []ACLRule `json:"rules"`
	// ModifiedAtMS is stamped by the proposer.
	ModifiedAtMS int64 `json:"modified_at_ms"`
}

// ValidateACLName reports why name cannot name a policy or token, or nil.
func ValidateACLName(what, name string) error {
	if !aclNamePattern.MatchString(name) {
		return fmt.Errorf("%s name %q: want 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", what, name)
	}
	return nil
}

// Validate reports why p cannot be stored, or nil.
func (p ACLPolicy) Validate() error {
	if err := ValidateACLName("policy", p.Name); err != nil {
		return err
	}
	if len(p.Description) > MaxACLDescription {
		return fmt.Errorf("policy %s: description longer than %d bytes", p.Name, MaxACLDescription)
	}
	if len(p.Rules) == 0 || len(p.Rules) > MaxACLRules {
		return fmt.Errorf("policy %s: want 1 to %d rules, got %d", p.Name, MaxACLRules, len(p.Rules))
	}
	for i, r := range p.Rules {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("policy %s: rule %d: %w", p.Name, i+1, err)
		}
	}
	if p.ModifiedAtMS <= 0 {
		return errors.New("modified_at_ms must be set by the proposer")
	}
	return nil
}

// ACLPolicyDelete is the payload of OpACLPolicyDelete.
type ACLPolicyDelete struct {
	Name string `json:"name"`
}

// ACLToken is a token as the state keeps it (the payload of
// OpACLTokenCreate and, inside ACLBootstrap, of OpACLBootstrap): never its
// secret, only the secret's SHA-256.
type ACLToken struct {
	AccessorID   string   `json:"accessor_id"`
	SecretSHA256 string   `json:"secret_sha256"`
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	Policies     []string `json:"policies,omitempty"`
	CreatedAtMS  int64    `json:"created_at_ms"`
	// ExpiresAtMS, when set, ends the token's validity.
	ExpiresAtMS int64 `json:"expires_at_ms,omitempty"`
}

// Validate reports why t cannot be stored, or nil (policies are checked
// against the state at apply).
func (t ACLToken) Validate() error {
	if !aclAccessorPattern.MatchString(t.AccessorID) {
		return fmt.Errorf("accessor id %q: want %d lower-case hex digits", t.AccessorID, 2*ACLAccessorIDBytes)
	}
	if !sha256HexPattern.MatchString(t.SecretSHA256) {
		return errors.New("secret_sha256: want 64 lower-case hex digits")
	}
	if err := ValidateACLName("token", t.Name); err != nil {
		return err
	}
	switch t.Type {
	case ACLTypeManagement:
		if len(t.Policies) != 0 {
			return errors.New("a management token may do everything: it takes no policies")
		}
	case ACLTypeClient:
		if len(t.Policies) == 0 || len(t.Policies) > MaxACLPolicyNames {
			return fmt.Errorf("a client token needs 1 to %d policies", MaxACLPolicyNames)
		}
		for _, p := range t.Policies {
			if err := ValidateACLName("policy", p); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("token type %q: want %s or %s", t.Type, ACLTypeClient, ACLTypeManagement)
	}
	if t.CreatedAtMS <= 0 {
		return errors.New("created_at_ms must be set by the proposer")
	}
	if t.ExpiresAtMS != 0 && t.ExpiresAtMS <= t.CreatedAtMS {
		return errors.New("expires_at_ms must be after created_at_ms")
	}
	return nil
}

// ACLTokenDelete is the payload of OpACLTokenDelete.
type ACLTokenDelete struct {
	AccessorID string `json:"accessor_id"`
}

// ACLBootstrap is the payload of OpACLBootstrap: the first management
// token.
type ACLBootstrap struct {
	Token ACLToken `json:"token"`
}

// ACLSecretHash is what the state keeps of a token's secret: the SHA-256
// of the whole token string, in lower-case hex.
func ACLSecretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// FormatACLSecret is the token string a user is given for secret bytes.
func FormatACLSecret(secret []byte) string { return ACLTokenPrefix + hex.EncodeToString(secret) }

// info is the public form of t: no secret hash.
func (t *ACLToken) info() ACLToken {
	c := *t
	c.SecretSHA256 = ""
	c.Policies = append([]string(nil), t.Policies...)
	return c
}

// ACLPolicies returns the policies, by name.
func (s *State) ACLPolicies() []ACLPolicy {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ACLPolicy, 0, len(s.ext.ACLPolicies))
	for _, p := range s.ext.ACLPolicies {
		c := *p
		c.Rules = append([]ACLRule(nil), p.Rules...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ACLPolicy returns one policy.
func (s *State) ACLPolicy(name string) (ACLPolicy, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p := s.ext.ACLPolicies[name]
	if p == nil {
		return ACLPolicy{}, false
	}
	c := *p
	c.Rules = append([]ACLRule(nil), p.Rules...)
	return c, true
}

// ACLTokens returns the tokens without their secret hashes, oldest first.
func (s *State) ACLTokens() []ACLToken {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ACLToken, 0, len(s.ext.ACLTokens))
	for _, t := range s.ext.ACLTokens {
		out = append(out, t.info())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAtMS != out[j].CreatedAtMS {
			return out[i].CreatedAtMS < out[j].CreatedAtMS
		}
		return out[i].AccessorID < out[j].AccessorID
	})
	return out
}

// ACLTokenByAccessor returns one token without its secret hash.
func (s *State) ACLTokenByAccessor(id string) (ACLToken, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.ext.ACLTokens[id]
	if t == nil {
		return ACLToken{}, false
	}
	return t.info(), true
}

func (s *State) applyACLBootstrap(c *Command) Result {
	var b ACLBootstrap
	if err := decodePayload(c, &b); err != nil {
		return s.invalid("%v", err)
	}
	if err := b.Token.Validate(); err != nil {
		return s.invalid("acl bootstrap: %v", err)
	}
	if b.Token.Type != ACLTypeManagement {
		return s.invalid("acl bootstrap: the first token must be a management token")
	}
	if s.ext.ACLBootstrapped {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w: create more tokens with a management token ('corral acl token create')", ErrACLBootstrapped)}
	}
	if s.ext.ACLTokens == nil {
		s.ext.ACLTokens = map[string]*ACLToken{}
	}
	t := b.Token
	s.ext.ACLTokens[t.AccessorID] = &t
	s.ext.ACLBootstrapped = true
	s.aclChanged()
	return Result{Revision: s.revision}
}

func (s *State) applyACLPolicyPut(c *Command) Result {
	var p ACLPolicy
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if err := p.Validate(); err != nil {
		return s.invalid("acl policy: %v", err)
	}
	if s.ext.ACLPolicies[p.Name] == nil && len(s.ext.ACLPolicies) >= MaxACLPolicies {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w: %d policies exist, the limit", ErrACLTooMany, MaxACLPolicies)}
	}
	if s.ext.ACLPolicies == nil {
		s.ext.ACLPolicies = map[string]*ACLPolicy{}
	}
	s.ext.ACLPolicies[p.Name] = &p
	s.aclChanged()
	return Result{Revision: s.revision}
}

func (s *State) applyACLPolicyDelete(c *Command) Result {
	var d ACLPolicyDelete
	if err := decodePayload(c, &d); err != nil {
		return s.invalid("%v", err)
	}
	if s.ext.ACLPolicies[d.Name] == nil {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w %q", ErrACLPolicyUnknown, d.Name)}
	}
	// Tokens naming the policy keep the name and lose its grants; a
	// policy created again under the name gives them back (as Nomad).
	delete(s.ext.ACLPolicies, d.Name)
	if len(s.ext.ACLPolicies) == 0 {
		s.ext.ACLPolicies = nil
	}
	s.aclChanged()
	return Result{Revision: s.revision}
}

func (s *State) applyACLTokenCreate(c *Command) Result {
	var t ACLToken
	if err := decodePayload(c, &t); err != nil {
		return s.invalid("%v", err)
	}
	if err := t.Validate(); err != nil {
		return s.invalid("acl token: %v", err)
	}
	if !s.ext.ACLBootstrapped {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w: make the first token with 'corral acl bootstrap'", ErrACLNotBootstrapped)}
	}
	for _, p := range t.Policies {
		if s.ext.ACLPolicies[p] == nil {
			return Result{Revision: s.revision, Err: fmt.Errorf("%w %q: create it first ('corral acl policy create')", ErrACLPolicyUnknown, p)}
		}
	}
	if s.ext.ACLTokens[t.AccessorID] != nil {
		return s.invalid("acl token %s already exists", t.AccessorID)
	}
	if len(s.ext.ACLTokens) >= MaxACLTokens {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w: %d tokens exist, the limit", ErrACLTooMany, MaxACLTokens)}
	}
	for _, o := range s.ext.ACLTokens {
		if o.SecretSHA256 == t.SecretSHA256 {
			return s.invalid("acl token: the secret is in use")
		}
	}
	if s.ext.ACLTokens == nil {
		s.ext.ACLTokens = map[string]*ACLToken{}
	}
	s.ext.ACLTokens[t.AccessorID] = &t
	s.aclChanged()
	return Result{Revision: s.revision}
}

func (s *State) applyACLTokenDelete(c *Command) Result {
	var d ACLTokenDelete
	if err := decodePayload(c, &d); err != nil {
		return s.invalid("%v", err)
	}
	if s.ext.ACLTokens[d.AccessorID] == nil {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w %q", ErrACLTokenUnknown, d.AccessorID)}
	}
	delete(s.ext.ACLTokens, d.AccessorID)
	if len(s.ext.ACLTokens) == 0 {
		s.ext.ACLTokens = nil
	}
	s.aclChanged()
	return Result{Revision: s.revision}
}

// checkACL refuses a snapshot whose ACL objects are inconsistent.
func (e *extState) checkACL() error {
	if len(e.ACLPolicies) > MaxACLPolicies || len(e.ACLTokens) > MaxACLTokens {
		return corrupt("%d ACL policies and %d tokens, more than the limits", len(e.ACLPolicies), len(e.ACLTokens))
	}
	for k, p := range e.ACLPolicies {
		if p == nil || p.Name != k || p.Validate() != nil {
			return corrupt("ACL policy %q is inconsistent", k)
		}
	}
	for k, t := range e.ACLTokens {
		if t == nil || t.AccessorID != k || t.Validate() != nil {
			return corrupt("ACL token %q is inconsistent", k)
		}
	}
	if len(e.ACLTokens) > 0 && !e.ACLBootstrapped {
		return corrupt("ACL tokens exist but ACLs were never bootstrapped")
	}
	return nil
}
