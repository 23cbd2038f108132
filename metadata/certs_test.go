package metadata

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func revokeCmd(t *testing.T, r RevokeRequest) *Command {
	t.Helper()
	c, err := NewWorkerCommand(OpCertRevoke, r)
	require.NoError(t, err)
	return c
}

func TestCertRevoke_RefusesBadRequestsAndChangesNothing(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]RevokeRequest{
		"neither":             {},
		"both":                {Serial: "1F", Worker: "w1"},
		"lower-case serial":   {Serial: "1f"},
		"leading zero byte":   {Serial: "001F"},
		"odd length":          {Serial: "1F1"},
		"not hex":             {Serial: "xyz"},
		"serial too long":     {Serial: "01" + strings.Repeat("00", 20)},
		"bad worker id":       {Worker: "bad id"},
		"reason too long":     {Worker: "w1", Reason: strings.Repeat("r", 257)},
		"zero is not allowed": {Serial: "00"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := newApplier(t)
			require.ErrorIs(t, a.apply(revokeCmd(t, r)).Err, ErrInvalid)
			require.Empty(t, a.s.Revocations())
		})
	}
}

func TestCertRevoke_DeniesSerialsAndWorkers(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.NoError(t, a.apply(revokeCmd(t, RevokeRequest{Serial: "1F", Reason: "laptop stolen", AtMS: 5})).Err)
	require.NoError(t, a.apply(revokeCmd(t, RevokeRequest{Worker: "w1", AtMS: 6})).Err)
	// Revoking again is a no-op.
	require.NoError(t, a.apply(revokeCmd(t, RevokeRequest{Serial: "1F", Reason: "again", AtMS: 7})).Err)

	r, ok := a.s.Revoked("1F", "")
	require.True(t, ok)
	require.Equal(t, Revocation{Serial: "1F", Reason: "laptop stolen", AtMS: 5}, r)
	_, ok = a.s.Revoked("2A", "w1")
	require.True(t, ok, "every certificate naming worker w1 is denied")
	_, ok = a.s.Revoked("2A", "w2")
	require.False(t, ok)
	_, ok = a.s.Revoked("2A", "")
	require.False(t, ok)
	require.Equal(t, []Revocation{{Serial: "1F", Reason: "laptop stolen", AtMS: 5}, {Worker: "w1", AtMS: 6}}, a.s.Revocations())

	// The deny-list survives a snapshot.
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	back, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, a.s.Revocations(), back.Revocations())
	require.True(t, AffectsRevocations(revokeCmd(t, RevokeRequest{Serial: "1F"}).Marshal()))
	require.False(t, AffectsRevocations(putCmd("k", "v").Marshal()))
}

func TestCertRevoke_ListIsBounded(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	a.s.ext.RevokedWorkers = map[string]*Revocation{}
	for i := range MaxRevocations {
		id := "w" + strconv.Itoa(i)
		a.s.ext.RevokedWorkers[id] = &Revocation{Worker: id}
	}
	require.ErrorIs(t, a.apply(revokeCmd(t, RevokeRequest{Serial: "0ABC"})).Err, ErrTooManyRevocations)
	_, ok := a.s.Revoked("0ABC", "")
	require.False(t, ok)
}

func TestCertRevoke_CorruptDenyListRefused(t *testing.T) {
	t.Parallel()
	for name, e := range map[string]extState{
		"key and entry differ": {RevokedSerials: map[string]*Revocation{"1F": {Serial: "2F"}}},
		"bad serial key":       {RevokedSerials: map[string]*Revocation{"XX": {Serial: "XX"}}},
		"nil entry":            {RevokedWorkers: map[string]*Revocation{"w1": nil}},
		"worker with serial":   {RevokedWorkers: map[string]*Revocation{"w1": {Worker: "w1", Serial: "1F"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeExt(e.encode())
			require.ErrorIs(t, err, ErrCorruptSnapshot)
		})
	}
}

func TestNormalizeSerial(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1f": "1F", "1F": "1F", "01f": "1F", "serial=3A9F": "3A9F", "3a:9f:01": "3A9F01", " 0abc ": "0ABC",
		strings.Repeat("FF", 20): strings.Repeat("FF", 20),
	} {
		got, err := NormalizeSerial(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		require.NoError(t, ValidateSerial(got))
	}
	for _, in := range []string{"", "0", "00", "-1", "+1", "0x1f", "1_f", "xyz", "01" + strings.Repeat("00", 20), strings.Repeat("1", 100)} {
		_, err := NormalizeSerial(in)
		require.Error(t, err, in)
	}
	require.ErrorContains(t, ValidateSerial("1f"), "write it as 1F")
}
