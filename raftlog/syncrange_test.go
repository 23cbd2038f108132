package raftlog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A snapshot file is handed to the kernel's writeback every
// writebackEvery bytes as it is written, not all at its fsync, and the
// bytes that reach the file are the bytes written.
func TestPacedFileStartsWritebackAsItWrites(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "snap"))
	require.NoError(t, err)
	defer f.Close()
	p := &pacedFile{f: f}
	var want bytes.Buffer
	chunk := bytes.Repeat([]byte{0}, 1<<20)
	for i := range 9 {
		chunk[0] = byte(i)
		n, err := p.Write(chunk)
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
		want.Write(chunk)
		// Started at every writebackEvery bytes, and only there.
		require.Equal(t, int64(i+1)<<20/writebackEvery*writebackEvery, p.started, "after %d MiB", i+1)
	}
	got, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.True(t, bytes.Equal(want.Bytes(), got))
}

// A failed write is reported, and starts no writeback.
func TestPacedFileReportsWriteErrors(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "snap"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	p := &pacedFile{f: f}
	_, err = p.Write(make([]byte, writebackEvery))
	require.Error(t, err)
	require.Zero(t, p.started)
}
