package metadata

import (
	"crypto/sha256"
	"encoding/hex"
)

// ACLIndex is an immutable view of the ACL state for the request path:
// every API request resolves its token here, so the lookup takes no lock
// and allocates nothing. Every ACL apply and every restore builds a new
// one and publishes it atomically (State.ACL).
type ACLIndex struct {
	// Bootstrapped: OpACLBootstrap applied, so every request needs a
	// token.
	Bootstrapped bool
	// Revision is the state's ACLRevision this index was built from: a
	// request judged here is fenced with it (acl_fence.go).
	Revision uint64
	bySecret map[[sha256.Size]byte]*ACLIdentity
}

// ACLIdentity is a resolved token: who it is and what it may do.
type ACLIdentity struct {
	// AccessorID names the token in lists, logs and per-token limits
	// (never the secret).
	AccessorID string
	Name       string
	Type       string
	Policies   []string
	// Rules are the union of the token's policies' rules.
	Rules       []ACLRule
	ExpiresAtMS int64
}

// Management reports whether id may do everything.
func (id *ACLIdentity) Management() bool { return id.Type == ACLTypeManagement }

// Allows reports whether id may take acc on res for name (a key, a key
// prefix, a job or coordination name; "" for workers and operator). A
// rule's prefix must be a prefix of name: reading the range "app/" needs
// a rule for "app/" or a shorter prefix of it.
func (id *ACLIdentity) Allows(res ACLResource, acc ACLAccess, name string) bool {
	if id.Management() {
		return true
	}
	for _, r := range id.Rules {
		if r.grants(res, acc, name) {
			return true
		}
	}
	return false
}

// AllowsAny reports whether id may take acc on res for some name: the
// API checks it before it knows the name (a job spec in a body), and for
// leases, which have no name.
func (id *ACLIdentity) AllowsAny(res ACLResource, acc ACLAccess) bool {
	if id.Management() {
		return true
	}
	for _, r := range id.Rules {
		if r.Resource == res && (r.Access == ACLWrite || acc == ACLRead) {
			return true
		}
	}
	return false
}

// Lookup resolves a presented token string; nil when no token has it.
func (ix *ACLIndex) Lookup(secret string) *ACLIdentity {
	if ix == nil || len(ix.bySecret) == 0 {
		return nil
	}
	return ix.bySecret[sha256.Sum256([]byte(secret))]
}

// ACL returns the current ACL index (never nil).
func (s *State) ACL() *ACLIndex {
	if ix := s.aclIdx.Load(); ix != nil {
		return ix
	}
	return &ACLIndex{}
}

// rebuildACL publishes a new index of s.ext's ACL objects. The caller
// holds s.mu for writing (or owns s).
func (s *State) rebuildACL() {
	s.aclIdx.Store(buildACLIndex(&s.ext))
}

func buildACLIndex(e *extState) *ACLIndex {
	ix := &ACLIndex{Bootstrapped: e.ACLBootstrapped, Revision: e.ACLRevision, bySecret: make(map[[sha256.Size]byte]*ACLIdentity, len(e.ACLTokens))}
	for _, t := range e.ACLTokens {
		var key [sha256.Size]byte
		if n, err := hex.Decode(key[:], []byte(t.SecretSHA256)); err != nil || n != sha256.Size {
			continue // checkACL and Validate refuse such a token
		}
		id := &ACLIdentity{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type,
			Policies: append([]string(nil), t.Policies...), ExpiresAtMS: t.ExpiresAtMS}
		for _, p := range t.Policies {
			if pol := e.ACLPolicies[p]; pol != nil {
				id.Rules = append(id.Rules, pol.Rules...)
			}
		}
		ix.bySecret[key] = id
	}
	return ix
}
