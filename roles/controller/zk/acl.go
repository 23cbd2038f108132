package zk

import (
	"crypto/sha1"
	"encoding/base64"
	"net/netip"
	"strings"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// checkACL reports whether ids (a session's identities) hold perm on a
// node with acl. Schemes: world:anyone, digest (the exact id) and ip
// (an address or a CIDR range). An empty ACL allows all, as ZooKeeper's
// checkACL does (the state never stores one).
func checkACL(acl []metadata.ZNodeACL, perm int32, ids []jute.ID) bool {
	if len(acl) == 0 {
		return true
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		switch a.Scheme {
		case "world":
			if a.ID == "anyone" {
				return true
			}
		case "ip":
			for _, id := range ids {
				if id.Scheme == "ip" && ipMatches(a.ID, id.ID) {
					return true
				}
			}
		default:
			for _, id := range ids {
				if id.Scheme == a.Scheme && id.ID == a.ID {
					return true
				}
			}
		}
	}
	return false
}

// ipMatches reports whether addr is pattern (an address) or inside it (a
// CIDR range).
func ipMatches(pattern, addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	if p, err := netip.ParsePrefix(pattern); err == nil {
		return p.Contains(a)
	}
	if b, err := netip.ParseAddr(pattern); err == nil {
		return b.Unmap() == a
	}
	return false
}

func validIP(pattern string) bool {
	if _, err := netip.ParsePrefix(pattern); err == nil {
		return true
	}
	_, err := netip.ParseAddr(pattern)
	return err == nil
}

// fixACL turns a request's ACL into the stored one, as ZooKeeper's
// fixupACL: "auth" entries become the session's authenticated (digest)
// ids, duplicates go, and unknown schemes or malformed ids are
// InvalidACL.
func fixACL(in []jute.ACL, ids []jute.ID) ([]metadata.ZNodeACL, error) {
	if len(in) == 0 {
		return nil, jute.CodeInvalidACL
	}
	out := make([]metadata.ZNodeACL, 0, len(in))
	add := func(a metadata.ZNodeACL) {
		for _, o := range out {
			if o == a {
				return
			}
		}
		out = append(out, a)
	}
	for _, a := range in {
		switch a.ID.Scheme {
		case "world":
			if a.ID.ID != "anyone" {
				return nil, jute.CodeInvalidACL
			}
		case "digest":
			if strings.Count(a.ID.ID, ":") != 1 {
				return nil, jute.CodeInvalidACL
			}
		case "ip":
			if !validIP(a.ID.ID) {
				return nil, jute.CodeInvalidACL
			}
		case "auth":
			n := 0
			for _, id := range ids {
				if id.Scheme == "digest" {
					add(metadata.ZNodeACL{Scheme: id.Scheme, ID: id.ID, Perms: a.Perms})
					n++
				}
			}
			if n == 0 {
				return nil, jute.CodeInvalidACL
			}
			continue
		default:
			return nil, jute.CodeInvalidACL
		}
		add(metadata.ZNodeACL{Scheme: a.ID.Scheme, ID: a.ID.ID, Perms: a.Perms})
	}
	if len(out) > metadata.MaxZNodeACL {
		return nil, jute.CodeInvalidACL
	}
	return out, nil
}

func toJuteACL(acl []metadata.ZNodeACL, redact bool) []jute.ACL {
	out := make([]jute.ACL, len(acl))
	for i, a := range acl {
		id := a.ID
		if redact && a.Scheme == "digest" {
			// As ZooKeeper since 3.x (ZOOKEEPER-1392): a reader without
			// ADMIN does not see the password hashes, only the user.
			user, _, _ := strings.Cut(id, ":")
			id = user + ":x"
		}
		out[i] = jute.ACL{Perms: a.Perms, ID: jute.ID{Scheme: a.Scheme, ID: id}}
	}
	return out
}

// digestID is the digest scheme's id for "user:password":
// user:base64(sha1("user:password")).
func digestID(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	h := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

// setAuth runs an auth packet. digest adds an identity; any other scheme
// is AuthFailed and the connection ends, as ZooKeeper does.
func (c *conn) setAuth(xid int32, p *jute.AuthPacket) error {
	if p.Scheme != "digest" || !strings.Contains(string(p.Auth), ":") {
		c.srv.log.Warn("zk: authentication failed", "remote", c.remote, "session", hexID(c.sessionID()), "scheme", p.Scheme)
		c.reply(xid, jute.CodeAuthFailed, nil)
		return c.finish()
	}
	id := jute.ID{Scheme: "digest", ID: digestID(string(p.Auth))}
	ids := c.authIDs()
	for _, have := range ids {
		if have == id {
			c.reply(xid, jute.CodeOK, nil)
			return nil
		}
	}
	next := append(append([]jute.ID(nil), ids...), id)
	c.auth.Store(&next)
	c.srv.log.Info("zk: authenticated", "remote", c.remote, "session", hexID(c.sessionID()), "scheme", "digest", "user", strings.SplitN(id.ID, ":", 2)[0])
	c.reply(xid, jute.CodeOK, nil)
	return nil
}

// whoAmI lists the session's identities (ZooKeeper's ClientInfo: the
// scheme and the user name, not the digest).
func (c *conn) whoAmI() *jute.WhoAmIResponse {
	ids := c.authIDs()
	out := &jute.WhoAmIResponse{ClientInfo: make([]jute.ClientInfo, 0, len(ids))}
	for _, id := range ids {
		user := id.ID
		if id.Scheme == "digest" {
			user, _, _ = strings.Cut(id.ID, ":")
		}
		out.ClientInfo = append(out.ClientInfo, jute.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return out
}
