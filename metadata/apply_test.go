package metadata

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRevisionRules(t *testing.T) {
	type want struct {
		rev     int64
		deleted int64
		err     error // matched with errors.Is
		curMod  int64 // for compare failures
		// expected state of the command's key afterwards; nil => absent
		kv *KV
	}
	kv := func(v string, create, mod, ver int64) *KV {
		return &KV{Value: []byte(v), CreateRevision: create, ModRevision: mod, Version: ver}
	}
	steps := []struct {
		name string
		cmd  *Command
		want want
	}{
		{"create a", putCmd("a", "1"), want{rev: 1, kv: kv("1", 1, 1, 1)}},
		{"update a", putCmd("a", "2"), want{rev: 2, kv: kv("2", 1, 2, 2)}},
		{"same value still bumps", putCmd("a", "2"), want{rev: 3, kv: kv("2", 1, 3, 3)}},
		{"create b", putCmd("b", ""), want{rev: 4, kv: kv("", 4, 4, 1)}},
		{"delete missing key changes nothing", delCmd("zz"), want{rev: 4}},
		{"delete a", delCmd("a"), want{rev: 5, deleted: 1}},
		{"delete a again is a no-op", delCmd("a"), want{rev: 5}},
		{"recreate a resets version", putCmd("a", "3"), want{rev: 6, kv: kv("3", 6, 6, 1)}},
		{"cas with stale revision fails", casCmd("a", "x", 5), want{rev: 6, err: ErrCompareFailed, curMod: 6, kv: kv("3", 6, 6, 1)}},
		{"cas must-not-exist on existing key fails", casCmd("a", "x", 0), want{rev: 6, err: ErrCompareFailed, curMod: 6, kv: kv("3", 6, 6, 1)}},
		{"cas with current revision succeeds", casCmd("a", "4", 6), want{rev: 7, kv: kv("4", 6, 7, 2)}},
		{"cas must-not-exist creates", casCmd("c", "c", 0), want{rev: 8, kv: kv("c", 8, 8, 1)}},
		{"cas on missing key with nonzero prev fails", casCmd("d", "d", 3), want{rev: 8, err: ErrCompareFailed, curMod: 0}},
		{"cas delete with stale revision fails", casDelCmd("c", 7), want{rev: 8, err: ErrCompareFailed, curMod: 8, kv: kv("c", 8, 8, 1)}},
		{"cas delete with current revision", casDelCmd("c", 8), want{rev: 9, deleted: 1}},
		{"cas delete must-not-exist on missing key", casDelCmd("c", 0), want{rev: 9}},
		{"negative prev revision is invalid", casCmd("a", "x", -1), want{rev: 9, err: ErrInvalid, kv: kv("4", 6, 7, 2)}},
		{"empty key put is invalid", putCmd("", "x"), want{rev: 9, err: ErrInvalid}},
		{"empty key delete is invalid", delCmd(""), want{rev: 9, err: ErrInvalid}},
		{"set cluster id does not bump revision", &Command{Op: OpSetClusterID, Key: "cid-1"}, want{rev: 9}},
		{"known op with ignorable flag still applies", &Command{Op: OpPut | IgnoreUnknownTypeFlag, Key: "a", Value: []byte("5")}, want{rev: 10, kv: kv("5", 6, 10, 3)}},
	}
	a := newApplier(t)
	for _, st := range steps {
		before := a.s.Revision()
		res := a.apply(st.cmd)
		require.Equal(t, st.want.rev, res.Revision, st.name)
		require.Equal(t, st.want.rev, a.s.Revision(), st.name)
		require.Equal(t, st.want.deleted, res.Deleted, st.name)
		if st.want.err == nil {
			require.NoError(t, res.Err, st.name)
		} else {
			require.ErrorIs(t, res.Err, st.want.err, st.name)
			require.Equal(t, before, res.Revision, "%s: failure must not change the revision", st.name)
		}
		if errors.Is(st.want.err, ErrCompareFailed) {
			var ce *CompareError
			require.ErrorAs(t, res.Err, &ce, st.name)
			require.Equal(t, st.cmd.Key, ce.Key)
			require.Equal(t, st.cmd.PrevRevision, ce.Want)
			require.Equal(t, st.want.curMod, ce.CurrentModRevision, st.name)
		}
		if st.cmd.Op.Base() == OpSetClusterID || st.cmd.Key == "" {
			continue
		}
		got, ok := a.s.Get(st.cmd.Key)
		if st.want.kv == nil {
			require.False(t, ok, "%s: key %q should be absent", st.name, st.cmd.Key)
			continue
		}
		require.True(t, ok, st.name)
		w := *st.want.kv
		w.Key = st.cmd.Key
		require.Equal(t, w, got, st.name)
	}
	require.Equal(t, uint64(len(steps)), a.s.AppliedIndex())
	require.Equal(t, 2, a.s.Count()) // a, b
}

func TestSetClusterID(t *testing.T) {
	a := newApplier(t)
	require.Empty(t, a.s.ClusterID())
	require.ErrorIs(t, a.apply(&Command{Op: OpSetClusterID}).Err, ErrInvalid)
	require.NoError(t, a.apply(&Command{Op: OpSetClusterID, Key: "one"}).Err)
	require.Equal(t, "one", a.s.ClusterID())
	require.NoError(t, a.apply(&Command{Op: OpSetClusterID, Key: "one"}).Err, "equal id is not an error")
	require.NoError(t, a.apply(&Command{Op: OpSetClusterID, Value: []byte("one")}).Err, "id in Value is accepted")
	res := a.apply(&Command{Op: OpSetClusterID, Key: "two"})
	require.ErrorIs(t, res.Err, ErrClusterIDMismatch)
	require.Equal(t, "one", a.s.ClusterID(), "first writer wins")
	require.ErrorIs(t, a.apply(&Command{Op: OpSetClusterID, Key: "one", Value: []byte("two")}).Err, ErrInvalid)
	require.Equal(t, int64(0), a.s.Revision())
}

func TestApplySpecialEntries(t *testing.T) {
	s := New()
	id, res := s.Apply(1, nil)
	require.Zero(t, id)
	require.NoError(t, res.Err)
	require.Equal(t, uint64(1), s.AppliedIndex())

	// Gaps are fine (conf-change entries are not passed in).
	id, res = s.Apply(3, (&Command{ID: 7, Op: OpPut, Key: "k", Value: []byte("v")}).Marshal())
	require.Equal(t, uint64(7), id)
	require.NoError(t, res.Err)
	require.Equal(t, int64(1), res.Revision)

	// Replays are refused without side effects.
	id, res = s.Apply(3, (&Command{ID: 8, Op: OpPut, Key: "k", Value: []byte("w")}).Marshal())
	require.Zero(t, id)
	require.ErrorIs(t, res.Err, ErrAlreadyApplied)
	kv, _ := s.Get("k")
	require.Equal(t, "v", string(kv.Value))

	// Garbage advances only the applied index.
	before, err := s.Snapshot()
	require.NoError(t, err)
	_, res = s.Apply(4, []byte{0xde, 0xad})
	require.ErrorIs(t, res.Err, ErrUnsupportedVersion)
	_, res = s.Apply(5, []byte{CommandFormatV1, byte(OpPut), 1})
	require.ErrorIs(t, res.Err, ErrMalformed)
	require.Equal(t, int64(1), res.Revision)

	// An unknown op returns the id so the waiter learns about it.
	unknown := []byte{CommandFormatV1, 100, 9, 0}
	id, res = s.Apply(6, unknown)
	require.Equal(t, uint64(9), id)
	require.ErrorIs(t, res.Err, ErrUnknownOp)

	// The same op marked ignorable is skipped without error.
	ignorable := []byte{CommandFormatV1, 100 | byte(IgnoreUnknownTypeFlag), 10, 2, 0xaa, 0xbb}
	id, res = s.Apply(7, ignorable)
	require.Equal(t, uint64(10), id)
	require.NoError(t, res.Err)

	after, err := s.Snapshot()
	require.NoError(t, err)
	s2, err := Restore(before)
	require.NoError(t, err)
	_, _ = s2.Apply(7, nil)
	want, err := s2.Snapshot()
	require.NoError(t, err)
	require.Equal(t, want, after, "only the applied index may change")
}

func TestRange(t *testing.T) {
	a := newApplier(t)
	keys := []string{"b/2", "a", "b/10", "b/1", "b", "c", "b/\xff", "ba"}
	for _, k := range keys {
		require.NoError(t, a.apply(putCmd(k, "v-"+k)).Err)
	}
	names := func(kvs []KV) []string {
		var out []string
		for _, kv := range kvs {
			out = append(out, kv.Key)
		}
		return out
	}
	require.Equal(t, []string{"b/1", "b/10", "b/2", "b/\xff"}, names(a.s.Range("b/", 0)))
	require.Equal(t, []string{"b", "b/1", "b/10", "b/2", "b/\xff", "ba"}, names(a.s.Range("b", -1)))
	require.Equal(t, []string{"b/1", "b/10"}, names(a.s.Range("b/", 2)))
	require.Equal(t, []string{"a", "b", "b/1", "b/10", "b/2", "b/\xff", "ba", "c"}, names(a.s.Range("", 0)))
	require.Equal(t, []string{"a"}, names(a.s.Range("", 1)))
	require.Empty(t, a.s.Range("d", 0))
	require.Empty(t, a.s.Range("b/3", 0))
	require.Equal(t, len(keys), a.s.Count())

	// Returned values are copies.
	got := a.s.Range("a", 0)
	got[0].Value[0] = 'X'
	kv, _ := a.s.Get("a")
	require.Equal(t, "v-a", string(kv.Value))
	kv.Value[0] = 'Y'
	kv, _ = a.s.Get("a")
	require.Equal(t, "v-a", string(kv.Value))
}

// TestConcurrentReaders runs readers and snapshots against Apply; it finds
// nothing without -race.
func TestConcurrentReaders(t *testing.T) {
	s := New()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = s.Get("k/1")
				_ = s.Range("k/", 10)
				_, _ = s.Snapshot()
				_ = s.Count() + int(s.Revision()) + int(s.AppliedIndex()) + len(s.ClusterID())
			}
		})
	}
	for i := range 2000 {
		c := putCmd(fmt.Sprintf("k/%d", i%50), "v")
		if i%7 == 0 {
			c = delCmd(fmt.Sprintf("k/%d", i%50))
		}
		_, res := s.Apply(uint64(i+1), c.Marshal())
		require.NoError(t, res.Err)
	}
	close(stop)
	wg.Wait()
}

func TestValidate(t *testing.T) {
	require.NoError(t, ValidateKey("a/b"))
	require.ErrorIs(t, ValidateKey(""), ErrInvalid)
	require.ErrorIs(t, ValidateKey(string(make([]byte, MaxKeyLen+1))), ErrInvalid)
	require.ErrorIs(t, ValidateKey("a\x00"), ErrInvalid)
	require.ErrorIs(t, ValidateKey("\xff"), ErrInvalid)
	require.NoError(t, ValidateValue(make([]byte, MaxValueLen)))
	require.ErrorIs(t, ValidateValue(make([]byte, MaxValueLen+1)), ErrTooLarge)
}

// An entry appended in another term than its proposer's is skipped on
// every replica: only the applied index moves, and the proposer learns why.
func TestApplyEntrySkipsAProposalFromAnotherTerm(t *testing.T) {
	s := New()
	_, res := s.ApplyEntry(1, 3, (&Command{ID: 1, Term: 3, Op: OpPut, Key: "k", Value: []byte("v")}).Marshal())
	require.NoError(t, res.Err)
	before, err := s.Snapshot()
	require.NoError(t, err)

	late := (&Command{ID: 2, Term: 3, Op: OpPut, Key: "k", Value: []byte("late")}).Marshal()
	id, res := s.ApplyEntry(2, 4, late)
	require.Equal(t, uint64(2), id, "the proposer's waiter is told")
	require.ErrorIs(t, res.Err, ErrTermChanged)
	require.Equal(t, int64(1), res.Revision)
	require.Equal(t, uint64(2), s.AppliedIndex())
	kv, _ := s.Get("k")
	require.Equal(t, "v", string(kv.Value))
	s2, err := Restore(before)
	require.NoError(t, err)
	_, _ = s2.Apply(2, nil)
	want, err := s2.Snapshot()
	require.NoError(t, err)
	after, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, want, after, "only the applied index may change")

	// A command without a term (format 1, older proposers) and an entry
	// without one (Apply, term 0) are not checked.
	_, res = s.ApplyEntry(3, 9, (&Command{Op: OpPut, Key: "k", Value: []byte("old")}).Marshal())
	require.NoError(t, res.Err)
	_, res = s.Apply(4, late)
	require.NoError(t, res.Err)
	kv, _ = s.Get("k")
	require.Equal(t, "late", string(kv.Value))
}
