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
