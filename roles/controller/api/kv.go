package api

import (
	"encoding/base64"
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
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("key is %d bytes; the limit is %d", len(key), MaxKeyBytes)}
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
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("value is larger than the %d-byte limit", MaxValueBytes)}
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

func (s *Server) handlePut(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("lease") {
		s.handlePutLease(w, r) // ephemeral key (http_coord.go)
		return
	}
	key := r.PathValue("key")
	if err := writableKey(key); err != nil {
		writeError(w, err)
		return
	}
	prev, hasPrev, val, err := putArgs(r)
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := s.store.Propose(r.Context(), &metadata.Command{
		Op: metadata.OpPut, Key: key, Value: val, PrevRevision: prev, HasPrev: hasPrev})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		writeError(w, kvError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision})
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if err := writableKey(key); err != nil {
		writeError(w, err)
		return
	}
	res, err := s.store.Propose(r.Context(), &metadata.Command{Op: metadata.OpDelete, Key: key})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		writeError(w, kvError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": res.Revision, "deleted": res.Deleted})
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

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	q := r.URL.Query()
	prefix := q.Get("prefix") == "true"
	if !prefix {
		if err := validateKey(key); err != nil {
			writeError(w, err)
			return
		}
	}
	enc := q.Get("encoding")
	if enc != "" && enc != "base64" && enc != "text" {
		writeError(w, badRequest("encoding must be text or base64, got %q", enc))
		return
	}
	switch cons := q.Get("consistency"); cons {
	case "", "linearizable":
		if err := s.store.LinearizableRead(r.Context()); err != nil {
			writeError(w, err)
			return
		}
	case "serializable":
	default:
		writeError(w, badRequest("consistency must be linearizable or serializable, got %q", cons))
		return
	}
	st := s.store.State()
	if prefix {
		limit, _, err := queryInt(r, "limit")
		if err != nil {
			writeError(w, err)
			return
		}
		kvs := st.Range(key, int(limit))
		out := make([]kvJSON, len(kvs))
		for i, kv := range kvs {
			out[i] = toJSON(kv, enc)
		}
		writeJSON(w, http.StatusOK, map[string]any{"kvs": out, "revision": st.Revision()})
		return
	}
	kv, ok := st.Get(key)
	if !ok {
		writeJSON(w, http.StatusNotFound, &apiError{Code: "not_found", Message: fmt.Sprintf("key %q not found", key)})
		return
	}
	out := toJSON(kv, enc)
	out.Revision = st.Revision()
	writeJSON(w, http.StatusOK, out)
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
