package main

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-dev/corral/client"
)

// corralWriter puts through corral's own Go client, one client (one
// connection) per simulated client. Like etcd's writers, client n starts
// at endpoint n mod 3; unlike etcd's, it lists every endpoint, so the
// first answer from a follower names the leader (X-Corral-Leader) and
// its later puts go there, as the Go client does for every user.
// "corral-pinned" lists endpoint n mod 3 alone: puts stay on a follower
// for two clients in three, forwarded to the leader, as before the hint.
type corralWriter struct{ c *client.Client }

func newCorral(eps []string, n int) (writer, error) {
	return newCorralWith(eps, n, nil)
}

// newCorralNetHTTP is newCorral with the client given net/http's own
// Transport (Config.HTTPClient), as the Go client was before its direct
// transport: the two side by side show what the transport changes.
func newCorralNetHTTP(eps []string, n int) (writer, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return newCorralWith(eps, n, &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
}

// newCorralHTTP is newCorral with every put an HTTP request
// (client.Config.HTTPOnly), as the Go client sent them before its KV
// stream: the two side by side show what the stream changes.
func newCorralHTTP(eps []string, n int) (writer, error) {
	return newCorralConfig(eps, n, client.Config{HTTPOnly: true})
}

func newCorralWith(eps []string, n int, hc *http.Client) (writer, error) {
	return newCorralConfig(eps, n, client.Config{HTTPClient: hc})
}

func newCorralConfig(eps []string, n int, cfg client.Config) (writer, error) {
	list := make([]string, 0, len(eps))
	for i := range eps {
		list = append(list, eps[(n+i)%len(eps)])
	}
	cfg.Endpoints, cfg.Timeout = list, 10*time.Second
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	return &corralWriter{c: c}, nil
}

func newCorralPinned(eps []string, n int) (writer, error) {
	return newCorral(eps[n%len(eps):n%len(eps)+1], 0)
}

func (w *corralWriter) write(ctx context.Context, i int, value []byte) error {
	_, err := w.c.Put(ctx, "bench/k"+strconv.Itoa(i), value)
	return err
}

func (w *corralWriter) close() { _ = w.c.Close() }
