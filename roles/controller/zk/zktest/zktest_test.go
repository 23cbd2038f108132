package zktest

import (
	"net"
	"testing"
	"time"
)

// fakeSrvr answers each connection's four-letter word as ZooKeeper does:
// the answer, then close. answer decides it from the word and the number of
// connections so far.
func fakeSrvr(t *testing.T, answer func(word string, n int) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4)
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(buf); err == nil {
				_, _ = c.Write([]byte(answer(string(buf), n)))
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestFourLetters(t *testing.T) {
	addr := fakeSrvr(t, func(word string, _ int) string { return "you said " + word })
	out, err := FourLetters(addr, "ruok")
	if err != nil || out != "you said ruok" {
		t.Fatalf("FourLetters = %q, %v", out, err)
	}
}

// WaitServing waits through "not serving" answers, as a ZooKeeper loading
// its database gives, until srvr reports a mode.
func TestWaitServing(t *testing.T) {
	addr := fakeSrvr(t, func(word string, n int) string {
		if n < 3 {
			return "This ZooKeeper instance is not currently serving requests\n"
		}
		return "Zookeeper version: 3.8\nMode: standalone\n"
	})
	WaitServing(t, addr, 10*time.Second)
}
