package rawvshttp

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const conns = 128
const dur = 4 * time.Second

func run(t *testing.T, name string, op func(i int) error) {
	var n atomic.Int64
	stop := time.Now().Add(dur)
	c0 := cpu()
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if err := op(i); err != nil {
					t.Error(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	c := cpu() - c0
	t.Logf("%s: %d ops, %.0f ops/s, %.1f us CPU/op", name, n.Load(), float64(n.Load())/dur.Seconds(), float64(c.Microseconds())/float64(n.Load()))
}

func TestHTTP(t *testing.T) {
	var rev atomic.Int64
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = b
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]int64{"revision": rev.Add(1)})
	})}
	go srv.Serve(ln)
	defer srv.Close()
	val := make([]byte, 256)
	cls := make([]*client.Client, conns)
	for i := range cls {
		cls[i], _ = client.New(client.Config{Endpoints: []string{"http://" + ln.Addr().String()}})
	}
	run(t, "http", func(i int) error { _, err := cls[i].Put(context.Background(), "bench/k1", val); return err })
}

func TestRaw(t *testing.T) {
	var rev atomic.Int64
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReaderSize(c, 64<<10)
				var hdr [4]byte
				out := make([]byte, 0, 64)
				for {
					if _, err := io.ReadFull(br, hdr[:]); err != nil {
						return
					}
					b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
					if _, err := io.ReadFull(br, b); err != nil {
						return
					}
					out = out[:0]
					out = binary.BigEndian.AppendUint32(out, 12)
					out = binary.BigEndian.AppendUint32(out, binary.BigEndian.Uint32(b))
					out = binary.BigEndian.AppendUint64(out, uint64(rev.Add(1)))
					c.Write(out)
				}
			}()
		}
	}()
	defer ln.Close()
	type cc struct {
		c  net.Conn
		br *bufio.Reader
		mu sync.Mutex
	}
	cs := make([]*cc, conns)
	for i := range cs {
		c, _ := net.Dial("tcp", ln.Addr().String())
		cs[i] = &cc{c: c, br: bufio.NewReaderSize(c, 4096)}
	}
	val := make([]byte, 256)
	run(t, "raw", func(i int) error {
		x := cs[i]
		f := make([]byte, 0, 300)
		f = binary.BigEndian.AppendUint32(f, uint32(4+2+8+len(val)))
		f = binary.BigEndian.AppendUint32(f, 7)
		f = binary.BigEndian.AppendUint16(f, 8)
		f = append(f, "bench/k1"...)
		f = append(f, val...)
		if _, err := x.c.Write(f); err != nil {
			return err
		}
		var hdr [4]byte
		if _, err := io.ReadFull(x.br, hdr[:]); err != nil {
			return err
		}
		b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		_, err := io.ReadFull(x.br, b)
		return err
	})
}
