package main

import (
	"context"
	"errors"
	"io"
	"log"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkWriter sets the data of a znode, one session (one connection) per
// simulated client, pinned to one server.
type zkWriter struct{ c *zk.Conn }

// zkConnect opens a session on one of servers (go-zookeeper picks among them and moves to another when its server
// fails).
func zkConnect(servers []string) (*zk.Conn, error) {
	c, ev, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		return nil, err
	}
	deadline := time.After(15 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c, nil
			}
		case <-deadline:
			c.Close()
			return nil, errors.New("no session within 15s")
		}
	}
}

// zkPrepare creates /bench and its keys znodes once.
func zkPrepare(eps []string, keys int) error {
	c, err := zkConnect(eps[:1])
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Create("/bench", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	for i := 0; i < keys; i++ {
		if _, err := c.Create("/bench/k"+strconv.Itoa(i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

func newZK(eps []string, n int) (writer, error) {
	c, err := zkConnect([]string{eps[n%len(eps)]})
	if err != nil {
		return nil, err
	}
	return &zkWriter{c: c}, nil
}

func (w *zkWriter) write(_ context.Context, i int, value []byte) error {
	_, err := w.c.Set("/bench/k"+strconv.Itoa(i), value, -1)
	return err
}

func (w *zkWriter) close() { w.c.Close() }
