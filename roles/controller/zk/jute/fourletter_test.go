package jute

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFourLetterWords(t *testing.T) {
	words := FourLetterWords()
	require.Contains(t, words, "ruok")
	require.Contains(t, words, "mntr")
	for _, w := range words {
		got, ok := FourLetterWord([4]byte([]byte(w)))
		require.True(t, ok, w)
		require.Equal(t, w, got)
		// As a length, every word is far beyond jute.maxbuffer, so a server
		// that checks words first cannot mistake a real frame for one.
		require.Greater(t, int64(binary.BigEndian.Uint32([]byte(w))), int64(DefaultMaxFrame), w)
	}
	words[0] = "xxxx"
	require.NotContains(t, FourLetterWords(), "xxxx", "callers get a copy")

	for _, p := range [][4]byte{{0, 0, 0, 45}, {'R', 'U', 'O', 'K'}, {'r', 'u', 'o', 'x'}} {
		_, ok := FourLetterWord(p)
		require.False(t, ok, p)
	}
}
