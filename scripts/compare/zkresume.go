package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// compare zkresume opens N ZooKeeper sessions on one server, kills that
// server (SIGKILL to -pid) and reports how long the sessions took to
// resume on the others: the reconnect storm after a server dies. It works
// the same against corral's --zk-addr and ZooKeeper.
//
//	compare zkresume -first H:P -others H:P,H:P -pid PID -sessions 2000

// firstHost hands go-zookeeper its servers with first in front (it
// shuffles the connect string), then the others in order.
type firstHost struct {
	first   string
	mu      sync.Mutex
	servers []string
	next    int
}

func (h *firstHost) Init(servers []string) error {
	h.servers = []string{h.first}
	for _, s := range servers {
		if s != h.first {
			h.servers = append(h.servers, s)
		}
	}
	return nil
}

func (h *firstHost) Len() int { return len(h.servers) }

func (h *firstHost) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[h.next%len(h.servers)]
	h.next++
	return s, h.next%len(h.servers) == 0
}

func (h *firstHost) Connected() {}

func runZKResume(args []string) error {
	flags := flag.NewFlagSet("compare zkresume", flag.ContinueOnError)
	first := flags.String("first", "", "the server the sessions open on, and which is killed (host:port)")
	others := flags.String("others", "", "the other servers, host:port,...")
	pid := flags.Int("pid", 0, "the process id of -first's server")
	n := flags.Int("sessions", 2000, "sessions")
	timeout := flags.Duration("session-timeout", 10*time.Second, "session timeout asked for")
	wait := flags.Duration("wait", 60*time.Second, "how long to wait for the sessions to resume")
	flags.SetOutput(os.Stderr)
	if err := flags.Parse(args); err != nil {
		return err
	}
	switch {
	case *first == "" || len(splitList(*others)) == 0:
		return fmt.Errorf("-first and -others are required")
	case *pid <= 0:
		return fmt.Errorf("-pid: want the process id of %s's server, got %d", *first, *pid)
	case *n < 1 || *n > 100000:
		return fmt.Errorf("-sessions: want 1 to 100000, got %d", *n)
	}
	servers := append([]string{*first}, splitList(*others)...)
	var killedAt atomic.Int64
	var mu sync.Mutex
	durs := make([]time.Duration, 0, *n)
	var expired atomic.Int64
	conns := make([]*zk.Conn, *n)
	// measured marks the sessions on -first when it is killed: only their
	// resumes count.
	measured := make([]atomic.Bool, *n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	errs := make(chan error, *n)
	for i := range *n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			has := make(chan struct{})
			var once, resumed sync.Once
			cb := func(ev zk.Event) {
				switch ev.State {
				case zk.StateHasSession:
					once.Do(func() { close(has) })
					if k := killedAt.Load(); k != 0 && measured[i].Load() {
						resumed.Do(func() {
							mu.Lock()
							durs = append(durs, time.Since(time.Unix(0, k)))
							mu.Unlock()
						})
					}
				case zk.StateExpired:
					expired.Add(1)
				}
			}
			c, _, err := zk.Connect(servers, *timeout, zk.WithHostProvider(&firstHost{first: *first}),
				zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithEventCallback(cb))
			if err != nil {
				errs <- err
				return
			}
			select {
			case <-has:
				conns[i] = c
			case <-time.After(30 * time.Second):
				c.Close()
				errs <- fmt.Errorf("session %d: no session within 30s", i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// A session the first server did not take (it refused or was slow, and
	// the client moved on) is not measured: the kill does not touch it.
	onFirst := 0
	for i, c := range conns {
		if c.Server() == *first {
			measured[i].Store(true)
			onFirst++
		}
	}
	killedAt.Store(time.Now().UnixNano())
	if err := syscall.Kill(*pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", *pid, err)
	}
	deadline := time.Now().Add(*wait)
	for {
		mu.Lock()
		got := len(durs)
		mu.Unlock()
		if got >= onFirst || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // a report tool's poll, not a test
	}
	mu.Lock()
	got := slices.Clone(durs)
	mu.Unlock()
	slices.Sort(got)
	q := func(p float64) float64 {
		if len(got) == 0 {
			return 0
		}
		return got[min(len(got)-1, int(p*float64(len(got))))].Seconds() * 1000
	}
	fmt.Printf("sessions %d on %s %d resumed %d expired %d p50 %.0f ms p99 %.0f ms max %.0f ms\n",
		*n, *first, onFirst, len(got), expired.Load(), q(0.5), q(0.99), q(1))
	return nil
}
