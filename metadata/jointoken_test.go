package metadata

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	tokID     = "0123456789abcdef"
	tokAtMS   = int64(1_700_000_000_000)
	hourMS    = int64(time.Hour / time.Millisecond)
	keyA      = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	keyB      = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	tokSecret = "the secret of the test token, 32"
)

func joinCmd(t *testing.T, op Op, payload any) *Command {
	t.Helper()
	c, err := NewWorkerCommand(op, payload)
	require.NoError(t, err)
	return c
}

func createTok(id string, uses int, atMS int64, ttl time.Duration) JoinTokenCreate {
	return JoinTokenCreate{ID: id, SecretSHA256: JoinTokenSecretHash([]byte(tokSecret)), Role: JoinTokenRoleWorker,
		Uses: uses, AtMS: atMS, ExpiresAtMS: atMS + ttl.Milliseconds()}
}

func useTok(id, worker, key string, atMS int64) JoinTokenUse {
	return JoinTokenUse{ID: id, SecretSHA256: JoinTokenSecretHash([]byte(tokSecret)), Worker: worker, KeySHA256: key, AtMS: atMS}
}

func TestJoinToken_FormatAndParse(t *testing.T) {
	t.Parallel()
	secret := []byte(tokSecret)
	s := FormatJoinToken(tokID, secret)
	require.Equal(t, "corral-join-0123456789abcdef."+fmt.Sprintf("%x", secret), s)
	id, got, err := ParseJoinToken(" " + s + "\n")
	require.NoError(t, err)
	require.Equal(t, tokID, id)
	require.Equal(t, secret, got)
	for _, bad := range []string{"", "corral-join-", s[len(JoinTokenPrefix):], "corral-join-0123456789ABCDEF." + s[len(s)-64:],
		"corral-join-0123456789abcdef", "corral-join-0123456789abcdef." + strings.Repeat("z", 64), s + "00", s[:len(s)-2],
		"corral-join-0123456789abcde." + s[len(s)-64:]} {
		_, _, err := ParseJoinToken(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), s[len(s)-64:], "the error repeats the secret")
	}
}

func TestJoinToken_CreateRefusesBadRequests(t *testing.T) {
	t.Parallel()
	good := createTok(tokID, 1, tokAtMS, time.Hour)
	for name, mod := range map[string]func(*JoinTokenCreate){
		"bad id":          func(r *JoinTokenCreate) { r.ID = "XYZ" },
		"bad hash":        func(r *JoinTokenCreate) { r.SecretSHA256 = "00" },
		"controller role": func(r *JoinTokenCreate) { r.Role = "controller" },
		"zero uses":       func(r *JoinTokenCreate) { r.Uses = 0 },
		"too many uses":   func(r *JoinTokenCreate) { r.Uses = MaxJoinTokenUses + 1 },
		"ttl too short":   func(r *JoinTokenCreate) { r.ExpiresAtMS = r.AtMS + 59_999 },
		"ttl too long":    func(r *JoinTokenCreate) { r.ExpiresAtMS = r.AtMS + MaxJoinTokenTTL.Milliseconds() + 1 },
		"no clock":        func(r *JoinTokenCreate) { r.AtMS, r.ExpiresAtMS = 0, hourMS },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := good
			mod(&r)
			a := newApplier(t)
			require.ErrorIs(t, a.apply(joinCmd(t, OpJoinTokenCreate, r)).Err, ErrInvalid)
			require.Empty(t, a.s.JoinTokens())
		})
	}
	a := newApplier(t)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, good)).Err)
	require.ErrorIs(t, a.apply(joinCmd(t, OpJoinTokenCreate, good)).Err, ErrInvalid, "an id is never reused")
	// Unknown fields are refused like every JSON payload's.
	c := &Command{Op: OpJoinTokenCreate, Value: []byte(`{"id":"` + tokID + `","secret":"x"}`)}
	require.ErrorIs(t, a.apply(c).Err, ErrInvalid)
}

func TestJoinToken_Use(t *testing.T) {
	t.Parallel()
	type step struct {
		use     JoinTokenUse
		want    error // nil: accepted
		left    int   // uses left after the step
		inError string
	}
	wrong := useTok(tokID, "w1", keyA, tokAtMS+1)
	wrong.SecretSHA256 = JoinTokenSecretHash([]byte("another secret"))
	for name, tc := range map[string]struct {
		uses  int
		setup func(a *applier)
		steps []step
	}{
		"single use": {uses: 1, steps: []step{
			{use: useTok(tokID, "w1", keyA, tokAtMS+1), left: 0},
			{use: useTok(tokID, "w2", keyB, tokAtMS+2), want: ErrJoinTokenUsedUp, inError: "the last by worker w1"},
		}},
		"retry by the same worker and key spends nothing": {uses: 1, steps: []step{
			{use: useTok(tokID, "w1", keyA, tokAtMS+1), left: 0},
			{use: useTok(tokID, "w1", keyA, tokAtMS+2), left: 0},
			{use: useTok(tokID, "w1", keyB, tokAtMS+3), want: ErrJoinTokenUsedUp},
		}},
		"several uses": {uses: 2, steps: []step{
			{use: useTok(tokID, "w1", keyA, tokAtMS+1), left: 1},
			{use: useTok(tokID, "w2", keyB, tokAtMS+2), left: 0},
			{use: useTok(tokID, "w3", keyB, tokAtMS+3), want: ErrJoinTokenUsedUp},
		}},
		"expired": {uses: 5, steps: []step{
			{use: useTok(tokID, "w1", keyA, tokAtMS+hourMS), want: ErrJoinTokenExpired, left: 5, inError: "expired at 2023-11-14T23:13:20Z"},
		}},
		"wrong secret": {uses: 1, steps: []step{
			{use: wrong, want: ErrJoinTokenSecret, left: 1},
			{use: useTok(tokID, "w1", keyA, tokAtMS+2), left: 0},
		}},
		"wrong secret of an expired token says nothing of its expiry": {uses: 1, steps: []step{
			{use: func() JoinTokenUse { u := wrong; u.AtMS += 2 * hourMS; return u }(), want: ErrJoinTokenSecret, left: 1},
		}},
		"unknown": {uses: 1, steps: []step{
			{use: useTok("fedcba9876543210", "w1", keyA, tokAtMS+1), want: ErrJoinTokenUnknown, left: 1},
		}},
		"revoked token": {uses: 1, setup: func(a *applier) {
			require.NoError(t, a.apply(joinCmd(t, OpJoinTokenRevoke, JoinTokenRevoke{ID: tokID, AtMS: tokAtMS})).Err)
		}, steps: []step{
			{use: useTok(tokID, "w1", keyA, tokAtMS+1), want: ErrJoinTokenUnknown, left: -1},
		}},
		"revoked worker": {uses: 1, setup: func(a *applier) {
			require.NoError(t, a.apply(joinCmd(t, OpCertRevoke, RevokeRequest{Worker: "w1", AtMS: tokAtMS})).Err)
		}, steps: []step{
			{use: useTok(tokID, "w1", keyA, tokAtMS+1), want: ErrJoinWorkerRevoked, left: 1},
		}},
		"known worker": {uses: 1, setup: func(a *applier) {
			reg := WorkerRegistration{ID: "w1", Epoch: 1, Incarnation: "i1", ControllerEpoch: 1, AtMS: tokAtMS}
			require.NoError(t, a.apply(joinCmd(t, OpWorkerRegister, reg)).Err)
		}, steps: []step{
			{use: useTok(tokID, "w1", keyA, tokAtMS+1), want: ErrJoinWorkerTaken, left: 1, inError: "w1 is alive"},
			{use: useTok(tokID, "w2", keyA, tokAtMS+1), left: 0},
		}},
		"bad worker id": {uses: 1, steps: []step{
			{use: useTok(tokID, "bad id", keyA, tokAtMS+1), want: ErrInvalid, left: 1},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := newApplier(t)
			require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok(tokID, tc.uses, tokAtMS, time.Hour))).Err)
			if tc.setup != nil {
				tc.setup(a)
			}
			for i, st := range tc.steps {
				res := a.apply(joinCmd(t, OpJoinTokenUse, st.use))
				if st.want == nil {
					require.NoError(t, res.Err, "step %d", i)
					require.Equal(t, st.left, res.Out.(JoinTokenUsed).UsesLeft, "step %d", i)
				} else {
					require.ErrorIs(t, res.Err, st.want, "step %d", i)
					require.Contains(t, res.Err.Error(), st.inError, "step %d", i)
				}
				info, ok := a.s.JoinToken(tokID)
				if st.left < 0 {
					require.False(t, ok, "step %d", i)
					continue
				}
				require.True(t, ok, "step %d", i)
				require.Equal(t, st.left, info.UsesLeft, "step %d", i)
			}
		})
	}
}

func TestJoinToken_Revoke(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.ErrorIs(t, a.apply(joinCmd(t, OpJoinTokenRevoke, JoinTokenRevoke{ID: tokID})).Err, ErrJoinTokenUnknown)
	require.ErrorIs(t, a.apply(joinCmd(t, OpJoinTokenRevoke, JoinTokenRevoke{ID: "nope"})).Err, ErrInvalid)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok(tokID, 1, tokAtMS, time.Hour))).Err)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenRevoke, JoinTokenRevoke{ID: tokID})).Err)
	require.Empty(t, a.s.JoinTokens())
	require.Nil(t, a.s.ext.JoinTokens, "an empty map is not kept: the snapshot stays as it was")
}

// Tokens dead (expired or used up) for JoinTokenKeep are dropped when a
// token is created or used, by the command's own time.
func TestJoinToken_DeadTokensAreDropped(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok("000000000000000a", 1, tokAtMS, time.Hour))).Err)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok("000000000000000b", 1, tokAtMS, 48*time.Hour))).Err)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenUse, useTok("000000000000000b", "w1", keyA, tokAtMS+2*hourMS))).Err)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok("000000000000000c", 1, tokAtMS, 48*time.Hour))).Err)
	// A day after a's expiry, a is gone; b (used up an hour later) is kept a little longer.
	later := tokAtMS + hourMS + JoinTokenKeep.Milliseconds()
	res := a.apply(joinCmd(t, OpJoinTokenUse, useTok("000000000000000a", "w2", keyA, later)))
	require.ErrorIs(t, res.Err, ErrJoinTokenUnknown)
	require.Len(t, a.s.JoinTokens(), 2)
	res = a.apply(joinCmd(t, OpJoinTokenUse, useTok("000000000000000b", "w2", keyB, later)))
	require.ErrorIs(t, res.Err, ErrJoinTokenUsedUp)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok("000000000000000d", 1, later+hourMS, time.Hour))).Err)
	var ids []string
	for _, tok := range a.s.JoinTokens() {
		ids = append(ids, tok.ID)
	}
	require.Equal(t, []string{"000000000000000c", "000000000000000d"}, ids)
}

func TestJoinToken_CountIsBounded(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	for i := range MaxJoinTokens {
		require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok(fmt.Sprintf("%016x", i), 1, tokAtMS, time.Hour))).Err)
	}
	res := a.apply(joinCmd(t, OpJoinTokenCreate, createTok(fmt.Sprintf("%016x", MaxJoinTokens), 1, tokAtMS+1, time.Hour)))
	require.ErrorIs(t, res.Err, ErrTooManyJoinTokens)
	require.Len(t, a.s.JoinTokens(), MaxJoinTokens)
	// A dead token makes room at once, without waiting for JoinTokenKeep.
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenUse, useTok(fmt.Sprintf("%016x", 7), "w1", keyA, tokAtMS+2))).Err)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok(fmt.Sprintf("%016x", MaxJoinTokens), 1, tokAtMS+3, time.Hour))).Err)
	require.Len(t, a.s.JoinTokens(), MaxJoinTokens)
	_, ok := a.s.JoinToken(fmt.Sprintf("%016x", 7))
	require.False(t, ok)
}

func TestJoinToken_SnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenCreate, createTok(tokID, 3, tokAtMS, time.Hour))).Err)
	require.NoError(t, a.apply(joinCmd(t, OpJoinTokenUse, useTok(tokID, "w1", keyA, tokAtMS+5))).Err)
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	back, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, a.s.JoinTokens(), back.JoinTokens())
	require.Equal(t, []JoinTokenInfo{{ID: tokID, Role: "worker", Uses: 3, UsesLeft: 2, CreatedAtMS: tokAtMS,
		ExpiresAtMS: tokAtMS + hourMS, LastUsedAtMS: tokAtMS + 5, LastWorker: "w1"}}, back.JoinTokens())
	// The restored state goes on where the old one was: the retry rule too.
	res := back.applyJoinTokenUse(joinCmd(t, OpJoinTokenUse, useTok(tokID, "w1", keyA, tokAtMS+6)))
	require.NoError(t, res.Err)
	require.True(t, res.Out.(JoinTokenUsed).Retry)
	require.NotContains(t, string(a.s.ext.encode()), fmt.Sprintf("%x", tokSecret), "the secret itself is never kept")
}

func TestJoinToken_CorruptStateRefused(t *testing.T) {
	t.Parallel()
	ok := func() *JoinToken {
		return &JoinToken{ID: tokID, SecretSHA256: keyA, Role: "worker", Uses: 2, UsesLeft: 1, CreatedAtMS: 1, ExpiresAtMS: 2}
	}
	_, err := decodeExt((&extState{JoinTokens: map[string]*JoinToken{tokID: ok()}}).encode())
	require.NoError(t, err)
	for name, mod := range map[string]func(*JoinToken){
		"key and id differ": func(t *JoinToken) { t.ID = "fedcba9876543210" },
		"bad hash":          func(t *JoinToken) { t.SecretSHA256 = "x" },
		"bad role":          func(t *JoinToken) { t.Role = "controller" },
		"more left":         func(t *JoinToken) { t.UsesLeft = 3 },
		"negative left":     func(t *JoinToken) { t.UsesLeft = -1 },
		"expires first":     func(t *JoinToken) { t.ExpiresAtMS = 1 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok := ok()
			mod(tok)
			_, err := decodeExt((&extState{JoinTokens: map[string]*JoinToken{tokID: tok}}).encode())
			require.ErrorIs(t, err, ErrCorruptSnapshot)
		})
	}
}

func TestJoinToken_Params(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateJoinTokenParams("worker", time.Minute, 1))
	require.NoError(t, ValidateJoinTokenParams("worker", MaxJoinTokenTTL, MaxJoinTokenUses))
	require.ErrorContains(t, ValidateJoinTokenParams("controller", time.Hour, 1), "workers only")
	require.ErrorContains(t, ValidateJoinTokenParams("worker", time.Second, 1), "ttl 1s: want 1m0s to 720h0m0s")
	require.ErrorContains(t, ValidateJoinTokenParams("worker", time.Hour, 0), "uses 0: want 1 to 1000")
}
