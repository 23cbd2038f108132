package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// KV is one key with its value and revisions (etcd semantics: CreateRevision is the store revision that created the
// key, ModRevision the one that last changed it, Version the number of puts since creation).
type KV struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Version        int64
}

// ReadOption changes how Get and List read.
type ReadOption func(*readOptions)

type readOptions struct {
	serializable bool
}

// Serializable lets the contacted controller answer from its local state without confirming leadership: faster and
// available without a leader, but possibly stale. Reads are linearizable without it.
func Serializable() ReadOption {
	return func(o *readOptions) { o.serializable = true }
}

// wireKV is the JSON shape of a key in GET answers. The client always asks for encoding=base64 so that values are
// binary-safe; encoding/json decodes base64 strings into []byte.
type wireKV struct {
	Key            string `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
	Version        int64  `json:"version"`
}

func (w wireKV) kv() KV {
	return KV{Key: w.Key, Value: w.Value, CreateRevision: w.CreateRevision, ModRevision: w.ModRevision, Version: w.Version}
}

// Put sets key to value and returns the store revision of the write.
func (c *Client) Put(ctx context.Context, key string, value []byte) (int64, error) {
	return c.put(ctx, key, value, nil)
}

// CompareAndPut sets key to value only if the key's current mod revision is prevRevision (0: only if the key does
// not exist). On mismatch the error matches ErrCompareFailed and, as an *Error, carries the current ModRevision.
func (c *Client) CompareAndPut(ctx context.Context, key string, value []byte, prevRevision int64) (int64, error) {
	return c.put(ctx, key, value, &prevRevision)
}

func (c *Client) put(ctx context.Context, key string, value []byte, prev *int64) (int64, error) {
	q := url.Values{}
	if prev != nil {
		q.Set("prev_revision", strconv.FormatInt(*prev, 10))
	}
	if value == nil {
		value = []byte{}
	}
	var out struct {
		Revision int64 `json:"revision"`
	}
	sc := &streamCall{op: streamPut, key: key, value: value, done: func(b []byte) error {
		v, err := streamInts(b, 1)
		if err == nil {
			out.Revision = v[0]
		}
		return err
	}}
	if prev != nil {
		sc.flags, sc.prev = streamHasPrev, *prev
	}
	err := c.do(ctx, call{method: http.MethodPut, path: keyPath(key), query: q, body: value, stream: sc}, &out)
	if err != nil {
		return 0, err
	}
	return out.Revision, nil
}

// Get returns key's value and revisions; a missing key is an error matching ErrNotFound.
func (c *Client) Get(ctx context.Context, key string, opts ...ReadOption) (*KV, error) {
	var out wireKV
	sc := &streamCall{op: streamGet, key: key, done: func(b []byte) error {
		v, err := streamInts(b, 4) // revision, create, mod, version
		if err == nil {
			out = wireKV{Key: key, Value: b[32:], CreateRevision: v[1], ModRevision: v[2], Version: v[3]}
		}
		return err
	}}
	if readOpts(opts).serializable {
		sc.flags = streamSerializable
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: keyPath(key), query: readQuery(false, opts), stream: sc}, &out); err != nil {
		return nil, err
	}
	kv := out.kv()
	return &kv, nil
}

// List returns all keys starting with prefix (sorted by key) and the store revision they were read at. An empty
// prefix lists every key. The server answers ranges in pages (docs/API.md, "Range reads"); List follows them and
// returns the revision of the last page. Each page is read at its own revision: the list is not a snapshot when
// keys change while it is read. ListPages reads a large range without holding all of it.
func (c *Client) List(ctx context.Context, prefix string, opts ...ReadOption) ([]KV, int64, error) {
	var kvs []KV
	rev, err := c.ListPages(ctx, prefix, 0, func(p Page) error {
		kvs = append(kvs, p.KVs...)
		return nil
	}, opts...)
	if err != nil {
		return nil, 0, err
	}
	if kvs == nil {
		kvs = []KV{}
	}
	return kvs, rev, nil
}

// Page is one page of a range read.
type Page struct {
	KVs []KV
	// Revision is the store revision the page was read at.
	Revision int64
	// More says keys remain after this page; Next is then the last key of the page, to pass as after to
	// ListPage.
	More bool
	Next string
}

// ListPage reads one page of the keys starting with prefix that sort after after ("" for the first page): at most
// limit keys (0: the server's default, 1,000; the maximum is 10,000), fewer if the page reaches the server's
// size cap (4 MiB).
func (c *Client) ListPage(ctx context.Context, prefix, after string, limit int, opts ...ReadOption) (Page, error) {
	var out struct {
		KVs      []wireKV `json:"kvs"`
		Revision int64    `json:"revision"`
		More     bool     `json:"more"`
		Next     string   `json:"next"`
	}
	q := readQuery(true, opts)
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: keyPath(prefix), query: q}, &out); err != nil {
		return Page{}, err
	}
	p := Page{KVs: make([]KV, len(out.KVs)), Revision: out.Revision, More: out.More && out.Next != "", Next: out.Next}
	for i, w := range out.KVs {
		p.KVs[i] = w.kv()
	}
	return p, nil
}

// ListPages reads every page of the keys starting with prefix (limit keys per page, 0: the server's default) and
// hands each to fn in key order; an error from fn stops it. It returns the revision of the last page. Memory is
// bounded by one page.
func (c *Client) ListPages(ctx context.Context, prefix string, limit int, fn func(Page) error, opts ...ReadOption) (int64, error) {
	after := ""
	for {
		p, err := c.ListPage(ctx, prefix, after, limit, opts...)
		if err != nil {
			return 0, err
		}
		if err := fn(p); err != nil {
			return p.Revision, err
		}
		if !p.More || p.Next <= after {
			return p.Revision, nil
		}
		after = p.Next
	}
}

// Delete removes key. It returns the store revision and how many keys were deleted (0 if the key did not exist,
// which is not an error).
func (c *Client) Delete(ctx context.Context, key string) (rev int64, deleted int64, err error) {
	var out struct {
		Revision int64 `json:"revision"`
		Deleted  int64 `json:"deleted"`
	}
	sc := &streamCall{op: streamDelete, key: key, done: func(b []byte) error {
		v, err := streamInts(b, 2)
		if err == nil {
			out.Revision, out.Deleted = v[0], v[1]
		}
		return err
	}}
	if err := c.do(ctx, call{method: http.MethodDelete, path: keyPath(key), stream: sc}, &out); err != nil {
		return 0, 0, err
	}
	return out.Revision, out.Deleted, nil
}

func readOpts(opts []ReadOption) readOptions {
	var o readOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func readQuery(prefix bool, opts []ReadOption) url.Values {
	o := readOpts(opts)
	q := url.Values{"encoding": {"base64"}}
	if prefix {
		q.Set("prefix", "true")
	}
	if o.serializable {
		q.Set("consistency", "serializable")
	}
	return q
}

// keyPath returns the escaped request path for key: "/v1/kv/" followed by the key's segments, each path-escaped,
// joined by literal "/" so that keys read naturally in logs and proxies.
//
// Two cases would otherwise be rewritten by HTTP servers that clean paths (Go's ServeMux redirects them), turning
// the request into one for a different key: "." and ".." segments, whose dots are escaped as %2E, and empty
// segments (leading, trailing or doubled "/"), whose neighbouring "/" is sent as %2F. Servers decode both back.
func keyPath(key string) string {
	segs := strings.Split(key, "/")
	var b strings.Builder
	b.Grow(len("/v1/kv/") + len(key) + 8)
	b.WriteString("/v1/kv/")
	for i, s := range segs {
		if i > 0 {
			if segs[i-1] != "" && s != "" {
				b.WriteByte('/')
			} else {
				b.WriteString("%2F")
			}
		}
		if s == "." || s == ".." {
			b.WriteString(strings.Repeat("%2E", len(s)))
			continue
		}
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}
