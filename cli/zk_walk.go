package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// The import's walk of the source tree: breadth first, parents before
// children, a level's znodes copied a few at a time.

// zkImporter copies one tree. The walk is breadth-first, one level at a time, so every parent exists in the
// target before any of its children is created; the znodes of a level are copied zkImportParallel at a time.
type zkImporter struct {
	src, dst          *zk.Conn
	dryRun, overwrite bool

	mu     sync.Mutex
	report zkImportReport
}

// run copies the tree under root. Its error is for what stops the whole import (a lost session); what goes wrong
// with one znode is counted in the report.
func (im *zkImporter) run(root string) error {
	level := []string{root}
	if exists, _, err := im.src.Exists(root); err != nil {
		return im.fatal("check "+root+" in the source", err)
	} else if !exists {
		return fmt.Errorf("--path %s does not exist in the source; list the source's tree (zkCli.sh ls /) and pick an existing path", root)
	}
	if root != "/" {
		// The ancestors of --path first, each without its other children, so that root has a parent.
		var ancestors []string
		for p := parentPath(root); p != "/"; p = parentPath(p) {
			ancestors = append(ancestors, p)
		}
		slices.Reverse(ancestors)
		for _, a := range ancestors {
			if _, ok, err := im.copyNode(a); err != nil {
				return err
			} else if !ok {
				im.fail(root, fmt.Errorf("its ancestor %s could not be copied", a))
				return nil
			}
		}
	} else {
		// The root always exists, and is ZooKeeper's, not the application's: only its children are copied.
		kids, _, err := im.src.Children("/")
		if err != nil {
			return im.fatal("list / in the source", err)
		}
		level = nil
		for _, k := range kids {
			if k != "zookeeper" {
				level = append(level, "/"+k)
			}
		}
	}
	for len(level) > 0 {
		next, err := im.copyLevel(level)
		if err != nil {
			return err
		}
		level = next
	}
	return nil
}

// copyLevel copies the znodes of one level and returns the next level: the children of those that were copied or
// already existed.
func (im *zkImporter) copyLevel(paths []string) ([]string, error) {
	type result struct {
		kids []string
		err  error
	}
	results := make([]result, len(paths))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(zkImportParallel, len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				kids, _, err := im.copyNode(paths[i])
				results[i] = result{kids, err}
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()
	var next []string
	for i, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		for _, k := range r.kids {
			next = append(next, joinPath(paths[i], k))
		}
	}
	return next, nil
}

// copyNode copies one znode and returns its children in the source; ok reports whether the node now exists in the
// target (or would, in a dry run), so that its children may follow.
func (im *zkImporter) copyNode(p string) (kids []string, ok bool, err error) {
	data, stat, err := im.src.Get(p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		im.count(func(r *zkImportReport) { r.Vanished++ })
		return nil, false, nil
	case isSessionLost(err):
		return nil, false, im.fatal("read "+p+" in the source", err)
	case err != nil:
		im.fail(p, fmt.Errorf("read from the source: %v%s", err, authHint(err, "--from-auth")))
		return nil, false, nil
	}
	kind, ttl := kindOf(stat.EphemeralOwner)
	switch kind {
	case znodeEphemeral:
		// It belongs to a session of the source; its owner recreates it when it connects to the target.
		im.count(func(r *zkImportReport) { r.EphemeralSkipped++ })
		return nil, false, nil
	case znodeUnknownExtended:
		im.fail(p, fmt.Errorf("unknown node type (ephemeralOwner %#x): this corral does not know how to copy it", uint64(stat.EphemeralOwner)))
		return nil, false, nil
	}
	acl, _, err := im.src.GetACL(p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		im.count(func(r *zkImportReport) { r.Vanished++ })
		return nil, false, nil
	case isSessionLost(err):
		return nil, false, im.fatal("read the ACL of "+p+" in the source", err)
	case err != nil:
		im.fail(p, fmt.Errorf("read its ACL from the source: %v%s", err, authHint(err, "--from-auth")))
		return nil, false, nil
	case redactedACL(acl):
		im.fail(p, errors.New("the source hid the digest hashes of its ACL (user:x), as ZooKeeper does for a session "+
			"without ADMIN on the znode; add an identity the ACL grants ADMIN with --from-auth digest:user:password"))
		return nil, false, nil
	}
	if stat.NumChildren > 0 {
		kids, _, err = im.src.Children(p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			im.count(func(r *zkImportReport) { r.Vanished++ })
			return nil, false, nil
		case isSessionLost(err):
			return nil, false, im.fatal("list "+p+" in the source", err)
		case err != nil:
			im.fail(p, fmt.Errorf("list its children in the source: %v%s", err, authHint(err, "--from-auth")))
			return nil, false, nil
		}
		slices.Sort(kids)
	}

	if im.dryRun {
		exists, _, err := im.dst.Exists(p)
		switch {
		case isSessionLost(err):
			return nil, false, im.fatal("check "+p+" in the target", err)
		case err != nil:
			im.fail(p, fmt.Errorf("check the target: %v", err))
			return nil, false, nil
		case exists && im.overwrite:
			im.count(func(r *zkImportReport) { r.Updated++ })
		case exists:
			im.count(func(r *zkImportReport) { r.SkippedExisting++ })
		default:
			im.count(func(r *zkImportReport) { r.Created++ })
		}
		return kids, true, nil
	}

	switch kind {
	case znodeContainer:
		_, err = im.dst.CreateContainer(p, data, zk.FlagContainer, acl)
	case znodeTTL:
		// The TTL counts from the last change, which for the copy is now: a TTL node lives up to one TTL longer
		// in the target than it would have in the source.
		_, err = im.dst.CreateTTL(p, data, zk.FlagTTL, acl, ttl)
	default:
		// A sequential node is created by its full name, so it is persistent in plain terms.
		_, err = im.dst.Create(p, data, zk.FlagPersistent, acl)
	}
	switch {
	case err == nil:
		im.count(func(r *zkImportReport) { r.Created++ })
		return kids, true, nil
	case isSessionLost(err):
		return nil, false, im.fatal("create "+p+" in the target", err)
	case errors.Is(err, zk.ErrNodeExists) && !im.overwrite:
		im.count(func(r *zkImportReport) { r.SkippedExisting++ })
		return kids, true, nil
	case errors.Is(err, zk.ErrNodeExists):
		if err := im.overwriteNode(p, data, acl); err != nil {
			if isSessionLost(err) {
				return nil, false, im.fatal("overwrite "+p+" in the target", err)
			}
			im.fail(p, err)
			return nil, false, nil
		}
		im.count(func(r *zkImportReport) { r.Updated++ })
		return kids, true, nil
	case kind == znodeTTL:
		im.fail(p, fmt.Errorf("create a TTL node (TTL %s) in the target: %v%s (a ZooKeeper target makes TTL nodes only "+
			"when started with -Dzookeeper.extendedTypesEnabled=true)", ttl, err, authHint(err, "--to-auth")))
	default:
		im.fail(p, fmt.Errorf("create in the target: %v%s", err, authHint(err, "--to-auth")))
	}
	return nil, false, nil
}

// overwriteNode makes an existing target znode's data and ACL the source's; its type stays what it is.
func (im *zkImporter) overwriteNode(p string, data []byte, acl []zk.ACL) error {
	if _, err := im.dst.Set(p, data, -1); err != nil {
		return fmt.Errorf("set its data in the target: %w%s", err, authHint(err, "--to-auth"))
	}
	have, _, err := im.dst.GetACL(p)
	if err != nil {
		return fmt.Errorf("read its ACL in the target: %w%s", err, authHint(err, "--to-auth"))
	}
	if !slices.Equal(have, acl) {
		if _, err := im.dst.SetACL(p, acl, -1); err != nil {
			return fmt.Errorf("set its ACL in the target: %w%s", err, authHint(err, "--to-auth"))
		}
	}
	return nil
}

// redactedACL reports whether getACL hid digest hashes: ZooKeeper answers a session without ADMIN on the znode
// with "user:x" for every digest id, and copying that would lock everyone out of the copy (a real digest is a
// base64 SHA-1, never "x").
func redactedACL(acl []zk.ACL) bool {
	for _, a := range acl {
		if a.Scheme == "digest" && strings.HasSuffix(a.ID, ":x") {
			return true
		}
	}
	return false
}

// authHint says what to do about a NoAuth: the importer's session lacks an identity the znode's ACL (or its
// parent's, for a create) grants.
func authHint(err error, flag string) string {
	if errors.Is(err, zk.ErrNoAuth) {
		return fmt.Sprintf(" (the ACL does not grant this session; add an identity it grants with %s digest:user:password)", flag)
	}
	return ""
}

// isSessionLost reports errors after which no request on the connection will succeed: the walk stops instead of
// failing every remaining znode one by one.
func isSessionLost(err error) bool {
	return errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrAuthFailed)
}

func (im *zkImporter) fatal(what string, err error) error {
	if !isSessionLost(err) {
		return fmt.Errorf("%s: %v%s", what, err, authHint(err, "--from-auth"))
	}
	return fmt.Errorf("%s: %v: the session was lost (server down, or disconnected longer than --timeout); "+
		"run the import again once both ends are up: znodes already copied are skipped", what, err)
}

func (im *zkImporter) count(f func(*zkImportReport)) {
	im.mu.Lock()
	defer im.mu.Unlock()
	f(&im.report)
}

func (im *zkImporter) fail(p string, err error) {
	im.count(func(r *zkImportReport) {
		r.Failed++
		if len(r.Failures) < zkMaxFailuresShown {
			r.Failures = append(r.Failures, zkImportFailure{Path: p, Error: err.Error()})
		}
	})
}

// parentPath is the parent of a valid znode path other than "/".
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func joinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}
