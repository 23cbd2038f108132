package jobspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/corral-dev/corral/metadata"
)

// unknownFields lists every field of doc (JSON or YAML: YAML's parser
// reads both, with line numbers) that metadata.JobSpec does not have, by
// its path, with its line and the nearest known name. The strict JSON
// decoder stops at the first such field; a user fixing a spec wants them
// all at once. An empty result means no unknown field (or a document the
// strict decoder will report on itself).
func unknownFields(doc []byte) []metadata.FieldError {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil || len(root.Content) == 0 {
		return nil
	}
	w := walker{budget: maxWalk}
	w.walk(root.Content[0], reflect.TypeOf(metadata.JobSpec{}), "")
	return w.out
}

// maxWalk bounds the nodes one check visits: YAML aliases let a small
// document name the same big node many times over, and the walk follows
// them. Past it the check stops; the strict decoder (and YAML's own alias
// limits) still judge the document.
const maxWalk = 100000

type walker struct {
	budget int
	out    []metadata.FieldError
}

var unmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// walk checks node against type t, appending unknown fields.
func (w *walker) walk(node *yaml.Node, t reflect.Type, path string) {
	if w.budget--; w.budget < 0 || len(w.out) >= 100 {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return // a leaf with its own syntax (durations)
	}
	if node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	switch {
	case t.Kind() == reflect.Struct && node.Kind == yaml.MappingNode:
		fields := jsonFields(t)
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			name := k.Value
			p := name
			if path != "" {
				p = path + "." + name
			}
			ft, ok := fields[name]
			if !ok {
				w.out = append(w.out, metadata.FieldError{Field: p, Problem: unknownProblem(k.Line, name, fields)})
				continue
			}
			w.walk(v, ft, p)
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && node.Kind == yaml.SequenceNode:
		for i, v := range node.Content {
			w.walk(v, t.Elem(), path+"["+strconv.Itoa(i)+"]")
		}
	case t.Kind() == reflect.Map && node.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			w.walk(node.Content[i+1], t.Elem(), path+"."+node.Content[i].Value)
		}
	}
}

// jsonFields maps the JSON names of t's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}

func unknownProblem(line int, name string, fields map[string]reflect.Type) string {
	p := fmt.Sprintf("unknown field (line %d)", line)
	if s := nearest(name, fields); s != "" {
		p += fmt.Sprintf("; did you mean %q?", s)
	} else {
		known := make([]string, 0, len(fields))
		for k := range fields {
			known = append(known, k)
		}
		sort.Strings(known)
		p += "; known fields here: " + strings.Join(known, ", ")
	}
	return p
}

// nearest is the known name closest to name (edit distance at most 2, or
// one containing the other, case-insensitively), or "".
func nearest(name string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	lower := strings.ToLower(name)
	for k := range fields {
		lk := strings.ToLower(k)
		d := editDistance(lower, lk)
		if d > 2 && len(lower) >= 3 && (strings.Contains(lk, lower) || strings.Contains(lower, lk)) {
			d = 2
		}
		if d < bestD || d == bestD && best != "" && k < best {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99 // names that long are not typos of ours
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
