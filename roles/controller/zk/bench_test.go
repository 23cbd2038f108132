package zk

import (
	"fmt"
	"testing"

	gozk "github.com/go-zookeeper/zk"
)

// BenchmarkSetGet measures the server's own cost per request over
// loopback with go-zookeeper (the fake backend applies in memory, so
// this is the protocol and server path without raft).
func BenchmarkSetGet(b *testing.B) {
	fb := newFakeBackend()
	s := startServer(b, fb, Config{})
	c, _ := connect(b, s.Addr().String())
	if _, err := c.Create("/bench", []byte("x"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		b.Fatal(err)
	}
	data := []byte(fmt.Sprintf("%0100d", 0))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Set("/bench", data, -1); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Get("/bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchRoundTrip measures arming a data watch, the write that
// fires it, and the event's arrival.
func BenchmarkWatchRoundTrip(b *testing.B) {
	fb := newFakeBackend()
	s := startServer(b, fb, Config{})
	w, _ := connect(b, s.Addr().String())
	c, _ := connect(b, s.Addr().String())
	if _, err := c.Create("/fan", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _, ch, err := w.GetW("/fan")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Set("/fan", nil, -1); err != nil {
			b.Fatal(err)
		}
		<-ch
	}
}
