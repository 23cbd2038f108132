package main

import (
	"context"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdWriter puts through etcd's own Go client, one client (one gRPC
// connection) per simulated client, pinned to one endpoint.
type etcdWriter struct{ c *clientv3.Client }

func newEtcd(eps []string, n int) (writer, error) {
	// No client log: requests the deadline cuts off would each log a retry.
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[n%len(eps)]}, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return &etcdWriter{c: c}, nil
}

func (w *etcdWriter) write(ctx context.Context, i int, value []byte) error {
	_, err := w.c.Put(ctx, "bench/k"+strconv.Itoa(i), string(value))
	return err
}

func (w *etcdWriter) close() { _ = w.c.Close() }
