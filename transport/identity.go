package transport

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/metadata"
)

// IdentityScheme is the URI scheme of the SAN that names a node.
const IdentityScheme = "corral"

// Role is what a certificate lets its holder be.
type Role string

// The roles a node certificate can name. A controller may join the raft
// quorum and may also speak for workers (combined mode and `corral bench`
// hold a controller certificate); a worker may only be the one worker its
// certificate names.
const (
	RoleController Role = "controller"
	RoleWorker     Role = "worker"
)

// Identity is who a certificate says its holder is: a URI SAN
// corral://<cluster>/<role>/<id>. The cluster is the name given to the CA
// when it was made ('corral certs ca --cluster'); a node refuses a
// certificate that names another cluster even if the same key signed it
// (a CA certificate re-made under another name). Give each cluster its own
// CA. A controller's id is its raft node id; a worker's is its worker id.
type Identity struct {
	Cluster string
	Role    Role
	ID      string
}

// ErrNoIdentity means a certificate has no corral:// URI SAN.
var ErrNoIdentity = errors.New("certificate names no corral identity (URI SAN corral://CLUSTER/ROLE/ID)")

// clusterNamePattern keeps cluster names URI-safe and short.
var clusterNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidateClusterName reports why name cannot name a cluster, or nil.
func ValidateClusterName(name string) error {
	if !clusterNamePattern.MatchString(name) {
		return fmt.Errorf("cluster name %q: use 1-63 lower-case letters, digits or '-', starting with a letter or digit", name)
	}
	return nil
}

// Validate reports why id is not a usable identity, or nil: unknown roles,
// controller id 0 and malformed ids are refused.
func (id Identity) Validate() error {
	if err := ValidateClusterName(id.Cluster); err != nil {
		return err
	}
	switch id.Role {
	case RoleController:
		if _, err := parseNodeID(id.ID); err != nil {
			return err
		}
	case RoleWorker:
		if err := metadata.ValidateWorkerID(id.ID); err != nil {
			return err
		}
	default:
		return fmt.Errorf("role %q: want controller or worker", id.Role)
	}
	return nil
}

// parseNodeID accepts only the canonical decimal form of a non-zero uint64,
// so one node id has exactly one spelling in certificates.
func parseNodeID(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != s {
		return 0, fmt.Errorf("controller id %q: want a node id from 1 to %d in plain decimal", s, uint64(1<<64-1))
	}
	return n, nil
}

// NodeID returns a controller identity's raft node id, or 0 for any other.
func (id Identity) NodeID() uint64 {
	if id.Role != RoleController {
		return 0
	}
	n, err := parseNodeID(id.ID)
	if err != nil {
		return 0
	}
	return n
}

// URI is the SAN that carries id.
func (id Identity) URI() *url.URL {
	return &url.URL{Scheme: IdentityScheme, Host: id.Cluster, Path: "/" + string(id.Role) + "/" + id.ID}
}

// String is id's URI, for logs and errors.
func (id Identity) String() string { return id.URI().String() }

// ControllerIdentity is the identity of controller node in cluster.
func ControllerIdentity(cluster string, node uint64) Identity {
	return Identity{Cluster: cluster, Role: RoleController, ID: strconv.FormatUint(node, 10)}
}

// ParseIdentity parses and validates corral://<cluster>/<role>/<id>.
func ParseIdentity(s string) (Identity, error) {
	if strings.ContainsAny(s, "?#") {
		return Identity{}, fmt.Errorf("identity %q: want corral://CLUSTER/ROLE/ID, without a query or fragment", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return Identity{}, fmt.Errorf("identity %q: %w", s, err)
	}
	return identityFromURL(u)
}

func identityFromURL(u *url.URL) (Identity, error) {
	if u.Scheme != IdentityScheme || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || u.Port() != "" || u.RawPath != "" {
		return Identity{}, fmt.Errorf("identity %q: want corral://CLUSTER/ROLE/ID", u.Redacted())
	}
	role, id, ok := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !ok || !strings.HasPrefix(u.Path, "/") {
		return Identity{}, fmt.Errorf("identity %q: want corral://CLUSTER/ROLE/ID", u.Redacted())
	}
	ident := Identity{Cluster: u.Host, Role: Role(role), ID: id}
	if err := ident.Validate(); err != nil {
		return Identity{}, fmt.Errorf("identity %q: %w", u.Redacted(), err)
	}
	return ident, nil
}

// IdentityOf returns the identity a certificate names. It must carry
// exactly one corral:// URI SAN; two would leave the holder's identity up to
// whichever check looks first.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	var found []Identity
	for _, u := range cert.URIs {
		if u.Scheme != IdentityScheme {
			continue
		}
		id, err := identityFromURL(u)
		if err != nil {
			return Identity{}, err
		}
		found = append(found, id)
	}
	switch len(found) {
	case 0:
		return Identity{}, ErrNoIdentity
	case 1:
		return found[0], nil
	default:
		return Identity{}, fmt.Errorf("certificate names %d corral identities; want exactly one", len(found))
	}
}

// clusterOfCA returns the cluster name a CA certificate carries as the URI
// SAN corral://<cluster>.
func clusterOfCA(ca *x509.Certificate) (string, error) {
	for _, u := range ca.URIs {
		if u.Scheme != IdentityScheme {
			continue
		}
		if (u.Path != "" && u.Path != "/") || u.Opaque != "" || u.User != nil || u.Port() != "" ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawPath != "" {
			return "", fmt.Errorf("CA names %q: want corral://CLUSTER", u.Redacted())
		}
		if err := ValidateClusterName(u.Host); err != nil {
			return "", fmt.Errorf("CA: %w", err)
		}
		return u.Host, nil
	}
	return "", errors.New("CA certificate names no cluster (URI SAN corral://CLUSTER); make a new CA with 'corral certs ca'")
}
