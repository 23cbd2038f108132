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
	err := c.do(ctx, call{method: http.MethodPut, path: keyPath(key), query: q, body: value}, &out)
	if err != nil {
		return 0, err
	}
	return out.Revision, nil
}

// Get returns key's value and revisions; a missing key is an error matching ErrNotFound.
func (c *Client) Get(ctx context.Context, key string, opts ...ReadOption) (*KV, error) {
	var out wireKV
	if err := c.do(ctx, call{method: http.MethodGet, path: keyPath(key), query: readQuery(false, opts)}, &out); err != nil {
		return nil, err
	}
	kv := out.kv()
	return &kv, nil
}

// List returns all keys starting with prefix (sorted by key) and the store revision they were read at. An empty
// prefix lists every key.
func (c *Client) List(ctx context.Context, prefix string, opts ...ReadOption) ([]KV, int64, error) {
	var out struct {
		KVs      []wireKV `json:"kvs"`
		Revision int64    `json:"revision"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: keyPath(prefix), query: readQuery(true, opts)}, &out); err != nil {
		return nil, 0, err
	}
	kvs := make([]KV, len(out.KVs))
	for i, w := range out.KVs {
		kvs[i] = w.kv()
	}
	return kvs, out.Revision, nil
}

// Delete removes key. It returns the store revision and how many keys were deleted (0 if the key did not exist,
// which is not an error).
func (c *Client) Delete(ctx context.Context, key string) (rev int64, deleted int64, err error) {
	var out struct {
		Revision int64 `json:"revision"`
		Deleted  int64 `json:"deleted"`
	}
	if err := c.do(ctx, call{method: http.MethodDelete, path: keyPath(key)}, &out); err != nil {
		return 0, 0, err
	}
	return out.Revision, out.Deleted, nil
}

func readQuery(prefix bool, opts []ReadOption) url.Values {
	var o readOptions
	for _, opt := range opts {
		opt(&o)
	}
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
