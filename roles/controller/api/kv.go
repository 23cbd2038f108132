package api

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-dev/corral/metadata"
)

type kvJSON struct {
	Key            string `json:"key"`
	Value          string `json:"value"`
	Encoding       string `json:"encoding,omitempty"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
	Version        int64  `json:"version"`
	Revision       int64  `json:"revision,omitempty"`
}

func validateKey(key string) error {
	switch {
	case key == "":
		return badRequest("key is empty: use /v1/kv/{key}")
	case len(key) > MaxKeyBytes:
		return tooLarge("key is %d bytes; the limit is %d", len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return badRequest("key is not valid UTF-8")
	case strings.ContainsRune(key, 0):
		return badRequest("key contains a NUL byte")
	}
	return nil
}

// readValue reads the request body, refusing more than MaxValueBytes.
func readValue(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxValueBytes+1))
	if err != nil {
		return nil, badRequest("read request body: %v", err)
	}
	if len(body) > MaxValueBytes {
		return nil, tooLarge("value is larger than the %d-byte limit", MaxValueBytes)
	}
	return body, nil
}

func queryInt(r *http.Request, name string) (int64, bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, false, badRequest("%s must be a non-negative integer, got %q", name, s)
	}
	return v, true, nil
}

// putArgs reads a put's optional prev_revision and its value body.
func putArgs(r *http.Request) (prev int64, hasPrev bool, val []byte, err error) {
	if prev, hasPrev, err = queryInt(r, "prev_revision"); err != nil {
		return 0, false, nil, err
	}
	val, err = readValue(r)
	return prev, hasPrev, val, err
}

// handlePut is PUT /v1/kv/{key}, with ?lease=ID an ephemeral key.
func (s *Server) handlePut(_ http.ResponseWriter, r *http.Request) (any, error) {
	key := r.PathValue("key")
	if err := writableKey(key); err != nil {
		return nil, err
	}
	var lease int64
	leased := r.URL.Query().Has("lease")
	if leased {
		var err error
		if lease, err = leaseQuery(r); err != nil {
			return nil, err
		}
	}
	prev, hasPrev, val, err := putArgs(r)
	if err != nil {
		return nil, err
	}
	cmd := &metadata.Command{Op: metadata.OpPut, Key: key, Value: val}
	refusal := kvError
	if leased {
		if cmd, err = metadata.NewCoordCommand(metadata.OpPutLease, key, metadata.PutLeasePayload{Value: val, Lease: lease}); err != nil {
			return nil, err
		}
		refusal = coordError // lease errors too
	}
	cmd.PrevRevision, cmd.HasPrev = prev, hasPrev
	res, err := s.propose(r.Context(), cmd, refusal)
	if err != nil {
		return nil, err
	}
	return map[string]int64{"revision": res.Revision}, nil
}

func (s *Server) handleDelete(_ http.ResponseWriter, r *http.Request) (any, error) {
	key := r.PathValue("key")
	if err := writableKey(key); err != nil {
		return nil, err
	}
	res, err := s.deleteKey(r.Context(), key)
	if err != nil {
		return nil, err
	}
	return map[string]int64{"revision": res.Revision, "deleted": res.Deleted}, nil
}

// deleteKey deletes key: DELETE /v1/kv/{key} and the KV stream's delete.
func (s *Server) deleteKey(ctx context.Context, key string) (metadata.Result, error) {
	return s.propose(ctx, &metadata.Command{Op: metadata.OpDelete, Key: key}, kvError)
}

// getKey is key in st, or the 404 GET /v1/kv/{key} and the KV stream's
// get answer.
func getKey(st *metadata.State, key string) (metadata.KV, error) {
	kv, ok := st.Get(key)
	if !ok {
		return metadata.KV{}, notFound("not_found", "key %q not found", key)
	}
	return kv, nil
}

// propose proposes cmd; the state machine's refusal comes back as the
// error (Store.Propose), mapped by refusal.
func (s *Server) propose(ctx context.Context, cmd *metadata.Command, refusal func(error) error) (metadata.Result, error) {
	if err := s.admit(cmd.Op); err != nil { // quota.go
		return metadata.Result{}, err
	}
	res, err := s.store.Propose(ctx, cmd)
	if err != nil {
		return res, refusal(err)
	}
	return res, nil
}

// kvError turns a state-machine refusal into a 4xx answer.
func kvError(err error) error {
	var ce *metadata.CompareError
	if errors.As(err, &ce) {
		mod := ce.CurrentModRevision
		return &apiError{Status: http.StatusConflict, Code: "compare_failed", ModRevision: &mod,
			Message: fmt.Sprintf("compare failed: key %q has mod_revision %d, not %d", ce.Key, ce.CurrentModRevision, ce.Want)}
	}
	if errors.Is(err, metadata.ErrInvalid) {
		return badRequest("%v", err)
	}
	return err
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) (any, error) {
	key := r.PathValue("key")
	q := r.URL.Query()
	prefix := q.Get("prefix") == "true"
	if !prefix {
		if err := validateKey(key); err != nil {
			return nil, err
		}
	}
	enc := q.Get("encoding")
	if err := checkEncoding(enc); err != nil {
		return nil, err
	}
	if err := s.readable(r); err != nil {
		return nil, err
	}
	st := s.store.State()
	if prefix {
		return s.rangePage(w, r, st, key, enc)
	}
	kv, err := getKey(st, key)
	if err != nil {
		return nil, err
	}
	out := toJSON(kv, enc)
	out.Revision = st.Revision()
	return out, nil
}

// Range pages (GET /v1/kv/{prefix}?prefix=true): a page holds at most
// limit keys (DefaultRangeLimit when the request names none, never more
// than MaxRangeLimit) and, past its first key, about MaxRangeBytes of
// keys and values; an answer cut short carries "more": true and "next",
// the last key it holds, to pass as ?after= for the next page.
const (
	DefaultRangeLimit = 1000
	MaxRangeLimit     = 10000
	MaxRangeBytes     = 4 << 20
)

// rangeTail ends the answer to a range read, after its "kvs".
type rangeTail struct {
	Revision int64 `json:"revision"`
	// More says keys remain past this page; Next is then the key to pass
	// as ?after= to read them.
	More bool   `json:"more,omitempty"`
	Next string `json:"next,omitempty"`
}

// rangePage answers one page of a range read: ?limit=N (1..MaxRangeLimit,
// default DefaultRangeLimit) and ?after=KEY (exclusive; the previous
// page's next). The answer is {"kvs": [...], "revision", "more", "next"};
// it is encoded key by key as it is written, so a page costs about its
// copied keys and values, not several encoded copies of them.
func (s *Server) rangePage(w http.ResponseWriter, r *http.Request, st *metadata.State, prefix, enc string) (any, error) {
	limit, ok, err := queryInt(r, "limit")
	if err != nil {
		return nil, err
	}
	switch {
	case !ok || limit == 0:
		limit = DefaultRangeLimit
	case limit > MaxRangeLimit:
		return nil, badRequest("limit is %d; the maximum is %d (read the rest with ?after=, see docs/API.md)", limit, MaxRangeLimit)
	}
	after := r.URL.Query().Get("after")
	if after != "" && !strings.HasPrefix(after, prefix) {
		return nil, badRequest("after %q does not start with the prefix %q", after, prefix)
	}
	rev := st.Revision()
	maxBytes := MaxRangeBytes
	if enc == "base64" {
		maxBytes = MaxRangeBytes * 3 / 4 // base64 grows values by a third
	}
	kvs, more := st.RangePage(prefix, after, int(limit), maxBytes)
	tail := rangeTail{Revision: rev, More: more}
	if more {
		tail.Next = kvs[len(kvs)-1].Key
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	je := json.NewEncoder(bw)
	_, _ = bw.WriteString(`{"kvs":[`)
	for i := range kvs {
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		if err := je.Encode(toJSON(kvs[i], enc)); err != nil {
			return nil, nil // the client left
		}
		kvs[i] = metadata.KV{} // let the value go once written
	}
	end, err := json.Marshal(tail)
	if err != nil {
		return nil, err
	}
	_, _ = bw.WriteString("],")
	_, _ = bw.Write(end[1:]) // "revision":N,...}
	_ = bw.WriteByte('\n')
	_ = bw.Flush()
	return nil, nil
}

// checkEncoding checks ?encoding= of reads and watches.
func checkEncoding(enc string) error {
	if enc != "" && enc != "base64" && enc != "text" {
		return badRequest("encoding must be text or base64, got %q", enc)
	}
	return nil
}

// readable makes the request's read linearizable unless it asks for
// ?consistency=serializable, and then judges the caller again on the
// state that read made current (reauthorize).
func (s *Server) readable(r *http.Request) error {
	switch cons := r.URL.Query().Get("consistency"); cons {
	case "", "linearizable":
		if err := s.store.LinearizableRead(r.Context()); err != nil {
			return err
		}
		return s.reauthorize(r)
	case "serializable":
		return nil
	default:
		return badRequest("consistency must be linearizable or serializable, got %q", cons)
	}
}

func toJSON(kv metadata.KV, enc string) kvJSON {
	out := kvJSON{Key: kv.Key, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version}
	if enc == "base64" {
		out.Value = base64.StdEncoding.EncodeToString(kv.Value)
		out.Encoding = "base64"
	} else {
		out.Value = string(kv.Value)
	}
	return out
}
