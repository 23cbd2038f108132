package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// KeepAliveStream is one long-lived keep-alive connection to the leader for a client that holds many leases: each
// KeepAlive call is one line on the stream and one line back, without a new HTTP request. It is not safe for
// concurrent use; make one per goroutine. If the leader changes the stream fails: Close it and open a new one.
type KeepAliveStream struct {
	mu     sync.Mutex
	pw     *io.PipeWriter
	resp   *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// OpenKeepAliveStream opens a keep-alive stream on the leader (trying each endpoint; followers refuse).
func (c *Client) OpenKeepAliveStream(ctx context.Context) (*KeepAliveStream, error) {
	var lastErr error
	for range len(c.endpoints) {
		sctx, cancel := context.WithCancel(ctx)
		pr, pw := io.Pipe()
		req, err := http.NewRequestWithContext(sctx, http.MethodPost, c.endpoints[int(c.preferred.Load())%len(c.endpoints)]+"/v1/leases/keepalive/stream", pr)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("build keep-alive stream request: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		type result struct {
			resp *http.Response
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := c.hc.Do(req)
			done <- result{resp, err}
		}()
		var res result
		select {
		case res = <-done:
		case <-ctx.Done():
			cancel()
			pw.Close()
			return nil, ctx.Err()
		}
		if res.err == nil && res.resp.StatusCode == http.StatusOK {
			sc := bufio.NewScanner(res.resp.Body)
			sc.Buffer(make([]byte, 4096), 4<<20)
			return &KeepAliveStream{pw: pw, resp: res.resp, sc: sc, cancel: cancel}, nil
		}
		if res.err == nil {
			lastErr = decodeError(res.resp)
			res.resp.Body.Close()
		} else {
			lastErr = res.err
		}
		pw.Close()
		cancel()
		c.preferred.Add(1) // most likely a follower: try the next endpoint
	}
	return nil, fmt.Errorf("open keep-alive stream: %w", lastErr)
}

// KeepAlive refreshes up to 4096 leases and returns the ids that no longer exist (or whose deadline passed).
func (s *KeepAliveStream) KeepAlive(ids []int64) (notFound []int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.pw.Write(append(jsonBody(map[string][]int64{"ids": ids}), '\n')); err != nil {
		return nil, fmt.Errorf("keep-alive stream: send: %w", err)
	}
	if !s.sc.Scan() {
		if err := s.sc.Err(); err != nil {
			return nil, fmt.Errorf("keep-alive stream: receive: %w", err)
		}
		return nil, errors.New("keep-alive stream: closed by the controller")
	}
	var out struct {
		NotFound []int64 `json:"not_found"`
		Error    string  `json:"error"`
		Code     string  `json:"code"`
	}
	if err := json.Unmarshal(s.sc.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("keep-alive stream: decode answer: %w", err)
	}
	if out.Code != "" {
		return nil, &Error{Status: http.StatusOK, Code: out.Code, Message: out.Error}
	}
	return out.NotFound, nil
}

// Close ends the stream.
func (s *KeepAliveStream) Close() error {
	s.pw.Close()
	s.cancel()
	return s.resp.Body.Close()
}
