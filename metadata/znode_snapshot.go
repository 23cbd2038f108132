package metadata

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// sectionZNodes holds the znode tree in binary (docs/ENCODING.md). It is
// its own section, not a field of the JSON ext section, for two reasons
// measured with 60,000 znodes: JSON took up to a second to write, and it
// had to be written under the state lock, because only a deep copy
// (through JSON again) could be encoded outside it. Znodes are copy on
// write, so a snapshot copies the path map under the lock and encodes the
// nodes after releasing it.
const sectionZNodes = 4

// minZNodeRecordLen is the smallest znode record: a 1-byte path with its
// length, flags, empty data's length, the ACL count and one entry of empty
// scheme and id, and the ten one-byte integers.
const minZNodeRecordLen = 2 + 1 + 1 + 1 + 3 + 10

// znode record flags.
const (
	znodeFlagNilData   = 1 << 0 // Data is nil (ZooKeeper's null), not empty
	znodeFlagContainer = 1 << 1
	znodeFlagsKnown    = znodeFlagNilData | znodeFlagContainer
)

// pathNode is one entry of a znode map, for encoding in path order.
type pathNode struct {
	path string
	n    *ZNode
}

// sortedZNodes returns the entries of nodes in byte order of their paths.
// The encoder walks this slice, not the map: with 200,000 znodes the map
// lookups (cache misses) cost more than the sort.
func sortedZNodes(nodes map[string]*ZNode) []pathNode {
	out := make([]pathNode, 0, len(nodes))
	for p, n := range nodes {
		out = append(out, pathNode{p, n})
	}
	var y yielder
	slices.SortFunc(out, func(a, b pathNode) int { y.step(); return strings.Compare(a.path, b.path) })
	return out
}

// encodeZNodes writes nodes in path order, so equal trees give equal
// bytes. nodes is a copy of the state's map; the nodes themselves are
// never changed once stored. The output is sized first: growing it by
// appends copied the whole section several times over. A snapshot streams
// the same bytes instead (SnapshotCut.WriteTo, through appendZNodeRecord).
func encodeZNodes(nodes map[string]*ZNode) []byte {
	sorted := sortedZNodes(nodes)
	b := make([]byte, 0, zNodesLen(sorted))
	b = binary.AppendUvarint(b, uint64(len(sorted)))
	for _, e := range sorted {
		b = appendZNodeRecord(b, e.path, e.n)
	}
	return b
}

// zNodesLen is the length of the znode section's encoding of sorted.
func zNodesLen(sorted []pathNode) int {
	size := uvarintLen(uint64(len(sorted)))
	var y yielder
	for _, e := range sorted {
		y.step()
		size += znodeRecordLen(e.path, e.n)
	}
	return size
}

// appendZNodeRecord appends one znode's record: znodeRecordLen bytes.
func appendZNodeRecord(b []byte, path string, n *ZNode) []byte {
	b = appendLenString(b, path)
	var flags byte
	if n.Data == nil {
		flags |= znodeFlagNilData
	}
	if n.Container {
		flags |= znodeFlagContainer
	}
	b = append(b, flags)
	b = appendLenBytes(b, n.Data)
	b = appendZNodeACL(b, n.ACL)
	for _, v := range n.ints() {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// ints are a record's integer fields in their order.
func (n *ZNode) ints() [10]int64 {
	return [...]int64{n.EphemeralOwner, n.TTLMS, n.Czxid, n.Mzxid, n.Pzxid,
		n.Ctime, n.Mtime, int64(n.Version), int64(n.Cversion), int64(n.Aversion)}
}

func znodeRecordLen(p string, n *ZNode) int {
	l := uvarintLen(uint64(len(p))) + len(p) + 1 + uvarintLen(uint64(len(n.Data))) + len(n.Data) +
		uvarintLen(uint64(len(n.ACL)))
	for _, a := range n.ACL {
		l += uvarintLen(uint64(len(a.Scheme))) + len(a.Scheme) + uvarintLen(uint64(len(a.ID))) + len(a.ID) + varintLen(int64(a.Perms))
	}
	for _, v := range n.ints() {
		l += varintLen(v)
	}
	return l
}

// varintLen is the length of binary.AppendVarint(nil, v).
func varintLen(v int64) int {
	ux := uint64(v) << 1
	if v < 0 {
		ux = ^ux
	}
	return uvarintLen(ux)
}

// decodeZNodes reads a znode section into a fresh map. Like the KV
// section, a forged count is checked against the bytes that remain, paths
// must be strictly ascending, and nothing is kept that aliases p.
// checkZNodes then checks the tree as a whole.
func decodeZNodes(p []byte) (map[string]*ZNode, error) {
	r := reader{b: p}
	count, err := r.uvarint()
	if err != nil {
		return nil, corrupt("znode count: %v", err)
	}
	if count == 0 {
		return nil, corrupt("empty znode section (an empty tree has none)")
	}
	if count > uint64(r.remaining()/minZNodeRecordLen) {
		return nil, corrupt("znode count %d cannot fit in %d bytes", count, r.remaining())
	}
	nodes := make(map[string]*ZNode, count)
	prev := ""
	for i := range count {
		path, n, err := readZNodeRecord(&r)
		if err != nil {
			return nil, corrupt("znode record %d: %v", i, err)
		}
		if i > 0 && path <= prev {
			return nil, corrupt("znode record %d: path %q not after %q", i, path, prev)
		}
		prev = path
		nodes[path] = n
	}
	if r.remaining() != 0 {
		return nil, corrupt("znode section: %d trailing bytes", r.remaining())
	}
	return nodes, nil
}

func readZNodeRecord(r *reader) (string, *ZNode, error) {
	path, err := r.lenBytes()
	if err != nil {
		return "", nil, fmt.Errorf("path: %w", err)
	}
	flags, err := r.byte()
	if err != nil {
		return "", nil, fmt.Errorf("flags: %w", err)
	}
	if flags&^znodeFlagsKnown != 0 {
		return "", nil, fmt.Errorf("unknown flags %#x", flags)
	}
	data, err := r.lenBytes()
	if err != nil {
		return "", nil, fmt.Errorf("data: %w", err)
	}
	n := &ZNode{Container: flags&znodeFlagContainer != 0}
	switch {
	case flags&znodeFlagNilData != 0 && len(data) > 0:
		return "", nil, fmt.Errorf("null data with %d bytes", len(data))
	case flags&znodeFlagNilData == 0:
		n.Data = append([]byte{}, data...)
	}
	if n.ACL, err = readZNodeACL(r, 1); err != nil {
		return "", nil, err
	}
	var v [10]int64
	for i := range v {
		if v[i], err = r.varint(); err != nil {
			return "", nil, fmt.Errorf("stat field %d: %w", i, err)
		}
	}
	for _, x := range v[7:] {
		if int64(int32(x)) != x {
			return "", nil, fmt.Errorf("version %d out of range", x)
		}
	}
	n.EphemeralOwner, n.TTLMS, n.Czxid, n.Mzxid, n.Pzxid, n.Ctime, n.Mtime = v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	n.Version, n.Cversion, n.Aversion = int32(v[7]), int32(v[8]), int32(v[9])
	return string(path), n, nil
}

// appendZNodeACL writes an ACL: its count, then scheme, id and perms of
// each entry (the znode section and OpZNodeWrite share it).
func appendZNodeACL(b []byte, acl []ZNodeACL) []byte {
	b = binary.AppendUvarint(b, uint64(len(acl)))
	for _, a := range acl {
		b = appendLenString(b, a.Scheme)
		b = appendLenString(b, a.ID)
		b = binary.AppendVarint(b, int64(a.Perms))
	}
	return b
}

// readZNodeACL reads what appendZNodeACL wrote, with least to MaxZNodeACL
// entries (a create's may be empty: apply refuses it as ZooKeeper's
// InvalidACL, as it would the JSON op's). An empty ACL is nil.
func readZNodeACL(r *reader, least uint64) ([]ZNodeACL, error) {
	count, err := r.uvarint()
	if err != nil {
		return nil, fmt.Errorf("acl count: %w", err)
	}
	if count < least || count > MaxZNodeACL {
		return nil, fmt.Errorf("acl count %d outside %d..%d", count, least, MaxZNodeACL)
	}
	if count == 0 {
		return nil, nil
	}
	if count == 1 {
		if w, ok := readWorldACL(r); ok {
			return w, nil
		}
	}
	acl := make([]ZNodeACL, count)
	for i := range acl {
		scheme, err := r.lenBytes()
		if err != nil {
			return nil, fmt.Errorf("acl %d scheme: %w", i, err)
		}
		id, err := r.lenBytes()
		if err != nil {
			return nil, fmt.Errorf("acl %d id: %w", i, err)
		}
		perms, err := readInt32(r)
		if err != nil {
			return nil, fmt.Errorf("acl %d perms: %w", i, err)
		}
		acl[i] = ZNodeACL{Scheme: string(scheme), ID: string(id), Perms: perms}
	}
	return acl, nil
}

// readWorldACL reads a one-entry world:anyone ACL as the shared slice,
// allocating nothing, and leaves r as it was for anything else.
func readWorldACL(r *reader) ([]ZNodeACL, bool) {
	save := *r
	scheme, err1 := r.lenBytes()
	id, err2 := r.lenBytes()
	perms, err3 := readInt32(r)
	if err1 != nil || err2 != nil || err3 != nil || string(scheme) != "world" || string(id) != "anyone" || perms&^31 != 0 {
		*r = save
		return nil, false
	}
	return worldACLs[perms], true
}

// orderZNodes is sortedZNodes(nodes) from the previous cut's order: the
// nodes whose paths were not set since keep their place and pointer (a
// stored node never changes), the touched ones are looked up, sorted and
// merged in. Sorting every path took a third of a snapshot's CPU on a
// busy controller (0.34 of 0.99 s at 225,000 znodes); a merge reads the
// previous order once, in order. Should the result not hold exactly the
// map's nodes (a cut was dropped unwritten, so the order is not the
// last one's), it sorts after all; merged says whether it did not.
func orderZNodes(nodes map[string]*ZNode, prev []pathNode, touched map[string]struct{}) (_ []pathNode, merged bool) {
	if prev == nil {
		return sortedZNodes(nodes), false
	}
	moved := make([]pathNode, 0, len(touched))
	for p := range touched {
		if n := nodes[p]; n != nil {
			moved = append(moved, pathNode{p, n})
		}
	}
	var y yielder
	slices.SortFunc(moved, func(a, b pathNode) int { y.step(); return strings.Compare(a.path, b.path) })
	out := make([]pathNode, 0, len(nodes))
	for len(prev) > 0 || len(moved) > 0 {
		y.step()
		switch {
		case len(moved) == 0 || len(prev) > 0 && prev[0].path < moved[0].path:
			if _, changed := touched[prev[0].path]; !changed {
				out = append(out, prev[0])
			}
			prev = prev[1:]
		case len(prev) > 0 && prev[0].path == moved[0].path:
			prev = prev[1:] // the moved entry is the node now
		default:
			out = append(out, moved[0])
			moved = moved[1:]
		}
	}
	if len(out) != len(nodes) {
		return sortedZNodes(nodes), false
	}
	return out, true
}
