package metadata

import (
	"fmt"
	"testing"
)

func BenchmarkApplyPut(b *testing.B) {
	for _, keys := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			entries := make([][]byte, keys)
			for i := range entries {
				entries[i] = (&Command{ID: uint64(i), Op: OpPut, Key: fmt.Sprintf("bench/key/%08d", i), Value: make([]byte, 128)}).Marshal()
			}
			s := New()
			b.ReportAllocs()
			b.SetBytes(int64(len(entries[0])))
			var index uint64
			for b.Loop() {
				index++
				if _, res := s.Apply(index, entries[index%uint64(keys)]); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}

func BenchmarkSnapshot(b *testing.B) {
	s := New()
	for i := range 100000 {
		_, _ = s.Apply(uint64(i+1), (&Command{Op: OpPut, Key: fmt.Sprintf("bench/key/%08d", i), Value: make([]byte, 128)}).Marshal())
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestore decodes a snapshot of 1,000,000 keys of 256 bytes, the
// state of issue 21's restart figure (a controller's restart is opening
// the log, this, and replaying the entries after the snapshot).
func BenchmarkRestore(b *testing.B) {
	s := New()
	val := make([]byte, 256)
	for i := range 1_000_000 {
		_, _ = s.Apply(uint64(i+1), (&Command{Op: OpPut, Key: fmt.Sprintf("bench/key/%08d", i), Value: val}).Marshal())
	}
	data, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		restore func([]byte) (*State, error)
	}{{"copy", Restore}, {"nocopy", RestoreNoCopy}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.restore(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
