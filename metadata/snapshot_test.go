package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleState(t testing.TB) *State {
	a := newApplier(t)
	a.apply(&Command{Op: OpSetClusterID, Key: "cid"})
	for _, k := range []string{"b", "a", "c/1", "c/2", "d"} {
		a.apply(putCmd(k, "v-"+k))
	}
	a.apply(putCmd("a", "again"))
	a.apply(putCmd("empty", ""))
	a.apply(delCmd("d"))
	return a.s
}

// fixCRC rewrites the trailing checksum so tests (and the fuzzer) can reach
// the parser behind it.
func fixCRC(b []byte) []byte {
	if len(b) < 4 {
		return b
	}
	body := b[:len(b)-4]
	binary.BigEndian.PutUint32(b[len(body):], crc32.Checksum(body, castagnoli))
	return b
}

// rawSnapshot assembles a v1 snapshot from (tag, payload) sections.
func rawSnapshot(sections ...[]byte) []byte {
	b := append([]byte(snapshotMagic), SnapshotFormatV1)
	for _, s := range sections {
		b = appendSectionHeader(b, s[0], len(s)-1)
		b = append(b, s[1:]...)
	}
	return fixCRC(append(b, 0, 0, 0, 0))
}

func section(tag byte, payload ...byte) []byte { return append([]byte{tag}, payload...) }

func TestSnapshotRoundTrip(t *testing.T) {
	for _, s := range []*State{New(), sampleState(t)} {
		snap, err := s.Snapshot()
		require.NoError(t, err)
		r, err := Restore(snap)
		require.NoError(t, err)
		require.Equal(t, s.AppliedIndex(), r.AppliedIndex())
		require.Equal(t, s.Revision(), r.Revision())
		require.Equal(t, s.ClusterID(), r.ClusterID())
		require.Equal(t, s.Count(), r.Count())
		require.Equal(t, s.Range("", 0), r.Range("", 0))
		again, err := r.Snapshot()
		require.NoError(t, err)
		require.Equal(t, snap, again)
	}
}

func TestSnapshotLayout(t *testing.T) {
	// Pin the v1 layout of an empty state documented in docs/ENCODING.md.
	s := New()
	_, _ = s.Apply(5, nil)
	snap, err := s.Snapshot()
	require.NoError(t, err)
	want := rawSnapshot(section(sectionMeta, 5, 0, 0), section(sectionKV, 0))
	require.Equal(t, want, snap)
	require.Equal(t, []byte("CORRALMD\x01\x01\x00\x00\x00\x00\x00\x00\x00\x03\x05\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00"), snap[:len(snap)-4])
}

func TestSnapshotIsolatedFromLaterApply(t *testing.T) {
	s := sampleState(t)
	snap1, err := s.Snapshot()
	require.NoError(t, err)
	r, err := Restore(snap1)
	require.NoError(t, err)
	_, res := s.Apply(100, putCmd("a", "changed").Marshal())
	require.NoError(t, res.Err)
	kv, _ := r.Get("a")
	require.Equal(t, "again", string(kv.Value))
	snap2, err := r.Snapshot()
	require.NoError(t, err)
	require.Equal(t, snap1, snap2)
}

func TestRestoreRejectsDamage(t *testing.T) {
	snap, err := sampleState(t).Snapshot()
	require.NoError(t, err)
	for i := range len(snap) {
		_, err := Restore(snap[:i])
		require.ErrorIs(t, err, ErrCorruptSnapshot, "truncated to %d", i)
	}
	for i := range len(snap) {
		for bit := range 8 {
			b := bytes.Clone(snap)
			b[i] ^= 1 << bit
			_, err := Restore(b)
			require.Error(t, err, "flip byte %d bit %d", i, bit)
		}
	}
	_, err = Restore(append(bytes.Clone(snap), 0))
	require.ErrorIs(t, err, ErrCorruptSnapshot)
	b := bytes.Clone(snap)
	b[len(snapshotMagic)] = 2
	_, err = Restore(fixCRC(b))
	require.ErrorIs(t, err, ErrUnsupportedVersion)
	_, err = Restore([]byte("definitely not a snapshot"))
	require.ErrorIs(t, err, ErrCorruptSnapshot)
}

func TestRestoreRejectsInconsistentContents(t *testing.T) {
	meta := section(sectionMeta, 1, 5, 0) // applied 1, revision 5, no cluster id
	rec := func(key string, create, mod, ver byte) []byte {
		return []byte{byte(len(key)), key[0], 0, create, mod, ver}
	}
	kvs := func(recs ...[]byte) []byte {
		p := []byte{byte(len(recs))}
		for _, r := range recs {
			p = append(p, r...)
		}
		return section(sectionKV, p...)
	}
	for _, tc := range []struct {
		name string
		snap []byte
	}{
		{"no sections", rawSnapshot()},
		{"missing kv", rawSnapshot(meta)},
		{"missing meta", rawSnapshot(kvs())},
		{"meta twice", rawSnapshot(meta, meta, kvs())},
		{"out of order", rawSnapshot(kvs(), meta)},
		{"meta trailing", rawSnapshot(section(sectionMeta, 1, 5, 0, 0), kvs())},
		{"kv trailing", rawSnapshot(meta, section(sectionKV, 0, 0))},
		{"unsorted keys", rawSnapshot(meta, kvs(rec("b", 1, 1, 1), rec("a", 2, 2, 1)))},
		{"duplicate keys", rawSnapshot(meta, kvs(rec("a", 1, 1, 1), rec("a", 2, 2, 1)))},
		{"mod above revision", rawSnapshot(meta, kvs(rec("a", 1, 6, 1)))},
		{"create zero", rawSnapshot(meta, kvs(rec("a", 0, 1, 1)))},
		{"mod below create", rawSnapshot(meta, kvs(rec("a", 3, 2, 1)))},
		{"version zero", rawSnapshot(meta, kvs(rec("a", 1, 1, 0)))},
		{"version too high", rawSnapshot(meta, kvs(rec("a", 2, 3, 3)))},
		{"empty key", rawSnapshot(meta, section(sectionKV, 1, 0, 0, 1, 1, 1))},
		{"count too big", rawSnapshot(meta, section(sectionKV, 2, 1, 'a', 0, 1, 1, 1))},
		{"section length beyond end", fixCRC(append(append([]byte(snapshotMagic), 1, sectionMeta, 0, 0, 0, 0, 0, 0, 1, 0), 0, 0, 0, 0))},
		{"truncated section header", fixCRC(append([]byte(snapshotMagic), 1, sectionMeta, 0, 0, 0, 0, 0, 0, 0, 0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Restore(tc.snap)
			require.ErrorIs(t, err, ErrCorruptSnapshot)
			require.Nil(t, s)
		})
	}
	_, err := Restore(rawSnapshot(meta, kvs(rec("a", 1, 1, 1), rec("b", 2, 5, 4))))
	require.NoError(t, err, "the valid variant of the records above is accepted")
}

func TestRestoreSectionFlags(t *testing.T) {
	meta := section(sectionMeta, 0, 0, 0)
	kv := section(sectionKV, 0)
	_, err := Restore(rawSnapshot(meta, kv, section(SectionIgnorableFlag|9, 1, 2, 3)))
	require.NoError(t, err, "unknown ignorable section is skipped")
	_, err = Restore(rawSnapshot(meta, kv, section(9, 1, 2, 3)))
	require.ErrorIs(t, err, ErrUnsupportedVersion, "unknown required section is refused")
}

func TestRestoreBoundsAllocation(t *testing.T) {
	huge := binary.AppendUvarint(nil, 1<<62)
	meta := section(sectionMeta, 0, 0, 0)
	for _, snap := range [][]byte{
		rawSnapshot(meta, section(sectionKV, huge...)),
		rawSnapshot(meta, section(sectionKV, append([]byte{1}, huge...)...)),                       // key length
		rawSnapshot(meta, section(sectionKV, append([]byte{1, 1, 'a'}, huge...)...)),               // value length
		rawSnapshot(section(sectionMeta, append([]byte{0, 0}, huge...)...), section(sectionKV, 0)), // cluster id length
		fixCRC(append(append([]byte(snapshotMagic), 1, sectionMeta, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 0, 0, 0, 0)),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Restore(snap)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrCorruptSnapshot)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "forged length must not drive allocation")
	}
}

func TestRestoreFrom(t *testing.T) {
	src := sampleState(t)
	snap, err := src.Snapshot()
	require.NoError(t, err)
	dst := New()
	_, _ = dst.Apply(1, putCmd("old", "x").Marshal())
	require.Error(t, dst.RestoreFrom(snap[:10]))
	require.Equal(t, 1, dst.Count(), "failed restore leaves the state unchanged")
	require.NoError(t, dst.RestoreFrom(snap))
	got, err := dst.Snapshot()
	require.NoError(t, err)
	require.Equal(t, snap, got)
	_, ok := dst.Get("old")
	require.False(t, ok)
}

func FuzzRestore(f *testing.F) {
	s := sampleState(f)
	snap, err := s.Snapshot()
	if err != nil {
		f.Fatal(err)
	}
	empty, _ := New().Snapshot()
	f.Add(snap, false)
	f.Add(empty, false)
	f.Add(mustSnapshot(f, zsample(f).s), false)
	f.Add(snap[:len(snap)/2], true)
	f.Add(rawSnapshot(section(sectionMeta, 0, 0, 0), section(sectionKV, 0), section(SectionIgnorableFlag|7, 1)), false)
	f.Fuzz(func(t *testing.T, data []byte, recomputeCRC bool) {
		if recomputeCRC {
			// Let the fuzzer explore the parser behind the checksum.
			data = fixCRC(bytes.Clone(data))
		}
		s, err := Restore(data)
		shared, errShared := RestoreNoCopy(data)
		if (err == nil) != (errShared == nil) {
			t.Fatalf("Restore: %v, RestoreNoCopy: %v", err, errShared)
		}
		if err != nil {
			if s != nil || shared != nil {
				t.Fatal("non-nil state with error")
			}
			return
		}
		// A restored state re-encodes to a stable, restorable snapshot,
		// the same with or without copying.
		out, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if outShared, _ := shared.Snapshot(); !bytes.Equal(out, outShared) {
			t.Fatal("RestoreNoCopy restored another state than Restore")
		}
		s2, err := Restore(out)
		if err != nil {
			t.Fatalf("re-encoded snapshot rejected: %v", err)
		}
		out2, _ := s2.Snapshot()
		if !bytes.Equal(out, out2) {
			t.Fatal("snapshot encoding is not stable")
		}
		// And it keeps working as a state machine.
		_, _ = s.Apply(s.AppliedIndex()+1, putCmd("fuzz", "v").Marshal())
	})
}

// encodeSnapshot encodes a snapshot with the given sections, as a cut of a
// state would (tests build snapshots no state could, e.g. znodes in both
// the ext and the znode section).
func encodeSnapshot(applied uint64, rev int64, cid string, tree *kvTree, ext, znodes []byte) []byte {
	c := &SnapshotCut{s: New(), applied: applied, rev: rev, cid: cid, tree: tree, ext: ext}
	c.Len()
	c.zn = znodes
	return c.Encode()
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.after < len(p) {
		return 0, errors.New("disk full")
	}
	f.after -= len(p)
	return len(p), nil
}

// WriteTo streams exactly the bytes Encode returns (Len of them), and a
// failing writer fails it with the writer's error.
func TestSnapshotWriteToMatchesEncode(t *testing.T) {
	a := newApplier(t)
	for i := range 5000 { // more than one write buffer
		a.apply(putCmd(fmt.Sprintf("w/%05d", i), strings.Repeat("x", 100)))
	}
	want, err := a.s.Snapshot()
	require.NoError(t, err)
	c := a.s.Cut()
	require.Equal(t, int64(len(want)), c.Len())
	var b bytes.Buffer
	n, err := c.WriteTo(&b)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), n)
	require.Equal(t, want, b.Bytes())

	_, err = a.s.Cut().WriteTo(&failingWriter{after: snapEncodeBuffer})
	require.ErrorContains(t, err, "disk full")
}

// A restored tree is built bottom up with full nodes (third_party/btree's
// loader), not by inserts: after a restore at sizes around a node's
// capacity (63 items) and a level's, the restored state must take the
// same writes as the state it came from and end equal to it.
func TestRestoredStateTakesWritesLikeTheOriginal(t *testing.T) {
	for _, n := range []int{0, 1, 62, 63, 64, 127, 200, 4031, 4033, 9000} {
		for _, restore := range []func([]byte) (*State, error){Restore, RestoreNoCopy} {
			a := newApplier(t)
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			for _, i := range rng.Perm(n) {
				a.apply(putCmd(fmt.Sprintf("k/%06d", 2*i), "v"))
			}
			data, err := a.s.Snapshot()
			require.NoError(t, err)
			r, err := restore(data)
			require.NoError(t, err)
			require.Equal(t, a.s.Range("", 0), r.Range("", 0), "n=%d: restored contents", n)
			b := &applier{t: t, s: r, index: a.index}
			for range 3*n + 200 {
				key := fmt.Sprintf("k/%06d", rng.IntN(2*n+20))
				c1, c2 := putCmd(key, "w"), putCmd(key, "w")
				if rng.IntN(3) == 0 {
					c1, c2 = delCmd(key), delCmd(key)
				}
				require.Equal(t, a.apply(c1), b.apply(c2))
			}
			require.Equal(t, a.s.Range("", 0), r.Range("", 0), "n=%d: after the writes", n)
			require.Equal(t, a.s.Revision(), r.Revision())
		}
	}
}
