package metadata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"unsafe"
)

// Snapshot format v1 (see docs/ENCODING.md):
//
//	magic "CORRALMD" | version u8 = 1 | section* | crc32c u32be
//
// section = tag u8 | length u64be | payload. Tags appear in strictly
// increasing order of their base value. A tag with SectionIgnorableFlag may
// be skipped by readers that do not know it; any other unknown tag is
// rejected because skipping it would lose replicated state.

// SnapshotFormatV1 is the version byte of snapshots written by this version.
const SnapshotFormatV1 = 1

// SectionIgnorableFlag marks a snapshot section that readers which do not
// know its tag may skip (the snapshot counterpart of IgnoreUnknownTypeFlag).
const SectionIgnorableFlag = 0x80

const (
	snapshotMagic    = "CORRALMD"
	snapHeaderLen    = len(snapshotMagic) + 1
	snapTrailerLen   = 4
	sectionHeaderLen = 1 + 8
	sectionMeta      = 1 // applied index, revision, cluster id
	sectionKV        = 2 // all keys in ascending order
	minKVRecordLen   = 6 // 1-byte key with its length, empty value, three 1-byte uvarints
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot serialises the state. Equal states (same applied index,
// revision, cluster id and KVs) produce identical bytes. It is Cut
// followed by Encode.
func (s *State) Snapshot() ([]byte, error) {
	return s.Cut().Encode(), nil
}

// SnapshotCut is the state at one applied index, copied cheaply so that it
// can be encoded while Apply goes on: the KV tree is a copy-on-write clone,
// the znode map frozen until the cut is written or released (znode_map.go;
// nodes are never changed in place), and only the small JSON ext section is
// encoded under the lock.
type SnapshotCut struct {
	s        *State
	applied  uint64
	rev      int64
	cid      string
	tree     *kvTree
	ext      []byte
	znodes   map[string]*ZNode
	freezeID uint64 // the freeze to thaw (0: znodes is the cut's own)
	released bool
	// The previous cut's order and the paths set since (orderZNodes).
	prevOrder  []pathNode
	touched    map[string]struct{}
	merged     bool // the order came from prevOrder (tests)
	bytesAtCut int64

	// Set by the first Len: the znodes in path order and the lengths of
	// the meta, KV and znode sections. zn, when set (tests), is a znode
	// section's bytes written as they are instead.
	sized                 bool
	znSorted              []pathNode
	zn                    []byte
	metaLen, kvLen, znLen int
}

// Cut copies the state under its lock. It takes the exclusive lock: the
// tree's Copy changes its copy-on-write bookkeeping, and the znodes are
// frozen. Write the cut (Encode, WriteTo) or Release it: until then the
// znode writes since the cut are kept apart.
func (s *State) Cut() *SnapshotCut {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cuts++
	f := s.ext.ZNodes.freeze(s.cuts)
	c := &SnapshotCut{s: s, applied: s.applied, rev: s.revision, cid: s.clusterID,
		tree: s.kvs.Copy(), znodes: f.nodes, bytesAtCut: s.extBytes,
		prevOrder: f.order, touched: f.touched}
	if f.shared {
		c.freezeID = s.cuts
	}
	if b := s.ext.encode(); string(b) != "{}" {
		c.ext = b
	}
	return c
}

// Index is the applied index the cut was taken at.
func (c *SnapshotCut) Index() uint64 { return c.applied }

// Encode serialises the cut without holding the state's lock, and
// re-anchors the state's size estimate (size.go) on what it wrote, keeping
// what Apply added since the cut. Call Encode or WriteTo once.
func (c *SnapshotCut) Encode() []byte {
	b := bytes.NewBuffer(make([]byte, 0, c.Len()))
	_, _ = c.WriteTo(b) // a bytes.Buffer does not fail
	return b.Bytes()
}

// Len is the length of the cut's encoding; the first call computes it.
func (c *SnapshotCut) Len() int64 {
	if !c.sized {
		if len(c.znodes) > 0 {
			// Streamed by WriteTo like the KV section: encoded whole, it
			// was a second copy of the tree in memory (40 MB at 240,000
			// znodes) for each snapshot.
			c.znSorted, c.merged = orderZNodes(c.znodes, c.prevOrder, c.touched)
			c.prevOrder, c.touched = nil, nil
			c.znLen = zNodesLen(c.znSorted)
		}
		c.metaLen = uvarintLen(c.applied) + uvarintLen(uint64(c.rev)) + uvarintLen(uint64(len(c.cid))) + len(c.cid)
		c.kvLen = uvarintLen(uint64(c.tree.Len()))
		var y yielder
		c.tree.Scan(func(it item) bool {
			y.step()
			c.kvLen += kvRecordLen(it)
			return true
		})
		c.sized = true
	}
	n := snapHeaderLen + 2*sectionHeaderLen + c.metaLen + c.kvLen + snapTrailerLen
	if len(c.ext) > 0 {
		n += sectionHeaderLen + len(c.ext)
	}
	if zn := c.zNodesLen(); zn > 0 {
		n += sectionHeaderLen + zn
	}
	return int64(n)
}

// zNodesLen is the znode section's length without its header (0: none).
func (c *SnapshotCut) zNodesLen() int {
	if len(c.zn) > 0 {
		return len(c.zn)
	}
	return c.znLen
}

// WriteTo is Encode into w, exactly Len bytes, through a small buffer: a
// controller streams its snapshot into the file (raftlog's
// CreateSnapshotFrom) rather than hold a copy of its whole state in memory.
func (c *SnapshotCut) WriteTo(w io.Writer) (int64, error) {
	c.Len()
	e := snapEncoder{w: w, b: make([]byte, 0, snapEncodeBuffer)}
	e.b = append(e.b, snapshotMagic...)
	e.b = append(e.b, SnapshotFormatV1)

	e.b = appendSectionHeader(e.b, sectionMeta, c.metaLen)
	e.b = binary.AppendUvarint(e.b, c.applied)
	e.b = binary.AppendUvarint(e.b, uint64(c.rev))
	e.b = appendLenString(e.b, c.cid)

	e.b = appendSectionHeader(e.b, sectionKV, c.kvLen)
	e.b = binary.AppendUvarint(e.b, uint64(c.tree.Len()))
	c.tree.Scan(func(it item) bool {
		e.b = appendLenString(e.b, it.key)
		e.b = appendLenBytes(e.b, it.value)
		e.b = binary.AppendUvarint(e.b, uint64(it.create))
		e.b = binary.AppendUvarint(e.b, uint64(it.mod))
		e.b = binary.AppendUvarint(e.b, uint64(it.version))
		return e.maybeFlush()
	})
	if len(c.ext) > 0 {
		e.b = appendSectionHeader(e.b, sectionExt, len(c.ext))
		e.b = append(e.b, c.ext...)
	}
	switch {
	case len(c.zn) > 0:
		e.b = appendSectionHeader(e.b, sectionZNodes, len(c.zn))
		e.b = append(e.b, c.zn...)
	case c.znLen > 0:
		e.b = appendSectionHeader(e.b, sectionZNodes, c.znLen)
		e.b = binary.AppendUvarint(e.b, uint64(len(c.znSorted)))
		for _, pn := range c.znSorted {
			e.b = appendZNodeRecord(e.b, pn.path, pn.n)
			if !e.maybeFlush() {
				break
			}
		}
	}
	if e.flush(); e.err == nil {
		e.b = binary.BigEndian.AppendUint32(e.b, e.crc)
		e.flush()
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.releaseLocked(e.err == nil)
	if e.err != nil {
		return e.n, fmt.Errorf("write metadata snapshot: %w", e.err)
	}
	c.s.extBytes += int64(len(c.ext)+c.zNodesLen()) - c.bytesAtCut
	return e.n, nil
}

// Release ends the cut's hold on the state's znodes without writing it:
// call it when a cut is dropped unwritten (after WriteTo it is a no-op).
func (c *SnapshotCut) Release() {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.releaseLocked(false)
}

// releaseLocked thaws the znodes; a written cut leaves its order for the
// next one.
func (c *SnapshotCut) releaseLocked(written bool) {
	if c.released {
		return
	}
	c.released = true
	var order []pathNode
	if written && len(c.zn) == 0 {
		order = c.znSorted
	}
	c.s.ext.ZNodes.thaw(c.freezeID, order)
}

// snapEncodeBuffer is how much of an encoding WriteTo holds before it
// writes it out.
const snapEncodeBuffer = 256 << 10

// snapEncoder buffers a snapshot's bytes, checksums and writes them out.
type snapEncoder struct {
	w   io.Writer
	b   []byte
	crc uint32
	n   int64
	err error
}

// maybeFlush writes the buffer out once it is nearly full; false stops
// the tree walk after an error.
func (e *snapEncoder) maybeFlush() bool {
	if len(e.b) >= snapEncodeBuffer*3/4 {
		e.flush()
	}
	return e.err == nil
}

func (e *snapEncoder) flush() {
	if e.err != nil || len(e.b) == 0 {
		return
	}
	e.crc = crc32.Update(e.crc, castagnoli, e.b)
	n, err := e.w.Write(e.b)
	e.n += int64(n)
	e.err = err
	e.b = e.b[:0]
	// A snapshot is written beside the requests, on a processor they
	// need. Go preempts a running goroutine only after a 10 ms time slice,
	// so a request woken behind the encoder waited for up to that long;
	// a buffer's worth of encoding is under a millisecond.
	runtime.Gosched()
}

// yielder lets the passes of a snapshot before its encoding (sorting or
// merging the znodes' order, sizing the sections: tens to hundreds of
// milliseconds at a few hundred thousand znodes) give their processor up
// every yieldEvery steps, for the reason snapEncoder.flush does.
type yielder struct{ n int }

// yieldEvery steps of a pass take a few hundred microseconds.
const yieldEvery = 4096

func (y *yielder) step() {
	if y.n++; y.n%yieldEvery == 0 {
		runtime.Gosched()
	}
}

func kvRecordLen(it item) int {
	return uvarintLen(uint64(len(it.key))) + len(it.key) + uvarintLen(uint64(len(it.value))) + len(it.value) +
		uvarintLen(uint64(it.create)) + uvarintLen(uint64(it.mod)) + uvarintLen(uint64(it.version))
}

func appendSectionHeader(b []byte, tag byte, n int) []byte {
	b = append(b, tag)
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

// Restore decodes a snapshot produced by Snapshot. Invalid input yields an
// error wrapping ErrCorruptSnapshot (or ErrUnsupportedVersion for a newer
// format); it never panics, and everything it allocates is bounded by
// len(data). The returned State shares no memory with data.
func Restore(data []byte) (*State, error) {
	s, err := decodeSnapshot(data, false)
	if err != nil {
		return nil, fmt.Errorf("restore metadata snapshot: %w", err)
	}
	return s, nil
}

// RestoreNoCopy is Restore without copying keys and values: the State's
// keys and values are slices of data. A controller restores the snapshot it
// starts from this way, from the snapshot file mapped read-only (see
// raftlog.Store.Snapshot): at a million keys, copying 270 MB into fresh heap
// took longer than the rest of the restore. The caller must never modify or
// release data while the State, or any SnapshotCut of it, may be in use:
// Apply replaces stored values and never writes into them, so a mapping
// that is never unmapped, or heap memory no one writes to, is safe.
func RestoreNoCopy(data []byte) (*State, error) {
	s, err := decodeSnapshot(data, true)
	if err != nil {
		return nil, fmt.Errorf("restore metadata snapshot: %w", err)
	}
	return s, nil
}

// RestoreFrom replaces s's contents with the decoded snapshot, so holders of
// s (e.g. HTTP readers) see the new state without swapping pointers. On error
// s is unchanged.
func (s *State) RestoreFrom(data []byte) error {
	n, err := Restore(data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied, s.revision, s.clusterID, s.kvs, s.ext = n.applied, n.revision, n.clusterID, n.kvs, n.ext
	s.kvBytes, s.extBytes = n.kvBytes, n.extBytes
	s.aclIdx.Store(n.aclIdx.Load())
	return nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorruptSnapshot}, args...)...)
}

// decodeSnapshot decodes data; with share, keys and values are slices of
// data (RestoreNoCopy) rather than copies.
func decodeSnapshot(data []byte, share bool) (*State, error) {
	if len(data) < snapHeaderLen+snapTrailerLen {
		return nil, corrupt("truncated: %d bytes, need at least %d", len(data), snapHeaderLen+snapTrailerLen)
	}
	if !bytes.Equal(data[:len(snapshotMagic)], []byte(snapshotMagic)) {
		return nil, corrupt("bad magic %q (not a corral metadata snapshot)", data[:len(snapshotMagic)])
	}
	if v := data[len(snapshotMagic)]; v != SnapshotFormatV1 {
		return nil, fmt.Errorf("%w: snapshot format %d (this binary reads %d)", ErrUnsupportedVersion, v, SnapshotFormatV1)
	}
	body := data[:len(data)-snapTrailerLen]
	want := binary.BigEndian.Uint32(data[len(body):])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return nil, corrupt("checksum mismatch: stored %#08x, computed %#08x (truncated or damaged)", want, got)
	}

	s := New()
	r := reader{b: body, off: snapHeaderLen}
	var seen [2]bool // meta, kv
	last := -1
	for r.remaining() > 0 {
		tag, payload, err := readSection(&r)
		if err != nil {
			return nil, err
		}
		base := int(tag &^ SectionIgnorableFlag)
		if base <= last {
			return nil, corrupt("section %d out of order after %d", base, last)
		}
		last = base
		switch base {
		case sectionMeta:
			err = s.decodeMeta(payload)
			seen[0] = true
		case sectionKV:
			if !seen[0] {
				return nil, corrupt("kv section before meta section")
			}
			err = s.decodeKVs(payload, share)
			seen[1] = true
		case sectionExt:
			if !seen[1] {
				return nil, corrupt("ext section before kv section")
			}
			s.ext, err = decodeExt(payload)
			s.extBytes = int64(len(payload))
			s.rebuildACL()
		case sectionZNodes:
			if !seen[1] {
				return nil, corrupt("znode section before kv section")
			}
			if s.ext.ZNodes.len() > 0 {
				return nil, corrupt("znodes in both the ext and the znode section")
			}
			var m map[string]*ZNode
			if m, err = decodeZNodes(payload); err == nil {
				s.ext.ZNodes = zmapOf(m)
				err = s.ext.checkZNodes()
			}
			s.extBytes += int64(len(payload))
		default:
			if tag&SectionIgnorableFlag == 0 {
				return nil, fmt.Errorf("%w: unknown required snapshot section %d (written by a newer corral)", ErrUnsupportedVersion, base)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if !seen[0] || !seen[1] {
		return nil, corrupt("missing section (meta present: %t, kv present: %t)", seen[0], seen[1])
	}
	return s, nil
}

func readSection(r *reader) (byte, []byte, error) {
	start := r.off
	hdr, err := r.bytes(sectionHeaderLen)
	if err != nil {
		return 0, nil, corrupt("section header at offset %d: %v", start, err)
	}
	n := binary.BigEndian.Uint64(hdr[1:])
	payload, err := r.bytes(n)
	if err != nil {
		return 0, nil, corrupt("section %d at offset %d: length %d exceeds remaining %d bytes", hdr[0], start, n, r.remaining())
	}
	return hdr[0], payload, nil
}

func (s *State) decodeMeta(p []byte) error {
	r := reader{b: p}
	var err error
	if s.applied, err = r.uvarint(); err != nil {
		return corrupt("meta applied index: %v", err)
	}
	if s.revision, err = r.int64u(); err != nil {
		return corrupt("meta revision: %v", err)
	}
	cid, err := r.lenBytes()
	if err != nil {
		return corrupt("meta cluster id: %v", err)
	}
	s.clusterID = string(cid)
	if r.remaining() != 0 {
		return corrupt("meta section: %d trailing bytes", r.remaining())
	}
	return nil
}

func (s *State) decodeKVs(p []byte, share bool) error {
	r := reader{b: p}
	count, err := r.uvarint()
	if err != nil {
		return corrupt("kv count: %v", err)
	}
	// Each record takes at least minKVRecordLen bytes, so a forged count
	// cannot make us loop (or allocate) beyond what the input holds.
	if count > uint64(r.remaining()/minKVRecordLen) {
		return corrupt("kv count %d cannot fit in %d bytes", count, r.remaining())
	}
	prev := ""
	// The loader fills the tree's nodes to the brim, bottom up: Load
	// half-fills them, which took twice the heap and page faults and half
	// again the time at a million keys (third_party/btree/CORRAL.md).
	ld := s.kvs.NewLoader()
	for i := range count {
		it, err := readKVRecord(&r, share)
		if err != nil {
			return corrupt("kv record %d: %v", i, err)
		}
		if i > 0 && it.key <= prev {
			return corrupt("kv record %d: key %q not after %q", i, it.key, prev)
		}
		if err := it.check(s.revision); err != nil {
			return corrupt("kv record %d (key %q): %v", i, it.key, err)
		}
		prev = it.key
		if !ld.Append(it) { // unreachable after the check above; never trust a tree built out of order
			return corrupt("kv record %d: key %q out of order", i, it.key)
		}
		s.kvBytes += itemBytes(it)
	}
	ld.Finish()
	if r.remaining() != 0 {
		return corrupt("kv section: %d trailing bytes", r.remaining())
	}
	return nil
}

func readKVRecord(r *reader, share bool) (item, error) {
	var it item
	key, err := r.lenBytes()
	if err != nil {
		return it, fmt.Errorf("key: %w", err)
	}
	val, err := r.lenBytes()
	if err != nil {
		return it, fmt.Errorf("value: %w", err)
	}
	if it.create, err = r.int64u(); err != nil {
		return it, fmt.Errorf("create revision: %w", err)
	}
	if it.mod, err = r.int64u(); err != nil {
		return it, fmt.Errorf("mod revision: %w", err)
	}
	if it.version, err = r.int64u(); err != nil {
		return it, fmt.Errorf("version: %w", err)
	}
	switch {
	case share:
		// Neither is ever written; the value's capacity ends with it,
		// so an append to it could only allocate.
		it.key = unsafe.String(unsafe.SliceData(key), len(key))
		if len(val) > 0 {
			it.value = val[:len(val):len(val)]
		}
	default:
		it.key = string(key)
		if len(val) > 0 {
			it.value = append([]byte(nil), val...)
		}
	}
	return it, nil
}

// check enforces the invariants Apply maintains, so a restored state is one
// Apply could have produced.
func (it item) check(revision int64) error {
	switch {
	case it.key == "":
		return fmt.Errorf("empty key")
	case it.create < 1 || it.mod < it.create || it.mod > revision:
		return fmt.Errorf("revisions create=%d mod=%d outside 1..%d", it.create, it.mod, revision)
	case it.version < 1 || it.version > it.mod-it.create+1:
		return fmt.Errorf("version %d impossible for create=%d mod=%d", it.version, it.create, it.mod)
	}
	return nil
}
