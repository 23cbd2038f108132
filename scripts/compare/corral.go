package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// corralWriter PUTs to one controller's HTTP API (clients are spread over
// the endpoints, like etcd's balancer and ZooKeeper's random server).
type corralWriter struct {
	hc  *http.Client
	url string
}

func newCorral(eps []string, n int) (writer, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	return &corralWriter{hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}, url: eps[n%len(eps)]}, nil
}

func (w *corralWriter) write(ctx context.Context, i int, value []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, w.url+"/v1/kv/bench/k"+strconv.Itoa(i), bytes.NewReader(value))
	if err != nil {
		return err
	}
	req.Header.Set("X-Corral-Client", "compare")
	resp, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT: HTTP %d", resp.StatusCode)
	}
	return nil
}

func (w *corralWriter) close() { w.hc.CloseIdleConnections() }
