package backup

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

func sampleBackup(t testing.TB) []byte {
	st := metadata.New()
	st.Apply(1, (&metadata.Command{Op: metadata.OpPut, Key: "k", Value: []byte("v")}).Marshal())
	data, err := st.Snapshot()
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, Header{Index: 1, Term: 2, ClusterID: "c1", CreatedAt: time.Unix(0, 0).UTC()}, data))
	return buf.Bytes()
}

func TestBackup_RoundTripAndDamage(t *testing.T) {
	raw := sampleBackup(t)
	b, err := Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, uint64(1), b.Header.Index)
	require.Equal(t, "c1", b.Header.ClusterID)

	for i := 0; i < len(raw); i += 7 {
		damaged := append([]byte(nil), raw...)
		damaged[i] ^= 0x40
		_, err := Decode(bytes.NewReader(damaged))
		require.True(t, errors.Is(err, ErrBadBackup), "flipped byte %d: %v", i, err)
	}
	for _, n := range []int{0, 5, len(raw) / 2, len(raw) - 1} {
		_, err := Decode(bytes.NewReader(raw[:n]))
		require.ErrorIs(t, err, ErrBadBackup, "truncated to %d", n)
	}
}

func FuzzDecodeBackup(f *testing.F) {
	f.Add(sampleBackup(f))
	f.Add([]byte("CORRALBK"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(bytes.NewReader(data))
		if err == nil && b.Header.Index == 0 {
			t.Fatal("accepted a backup without an index")
		}
	})
}
