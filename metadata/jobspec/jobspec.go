// Package jobspec parses the job specs users submit, JSON or YAML, into a validated *metadata.JobSpec.
//
// It is apart from metadata so that the replicated state machine stays pure: decoding untrusted user input (and
// the YAML library that takes) happens here, in the controller's HTTP handler, before a spec is proposed; the
// state machine only sees specs in their canonical JSON form. The JobSpec type, its defaults and its validation
// stay in metadata because applying a log entry uses them.
package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/corral-dev/corral/metadata"
)

// Parse decodes a JSON or YAML job spec strictly (unknown fields are errors), fills defaults and validates it.
// Every error is a *metadata.SpecError, so it matches metadata.ErrInvalid and metadata.SpecFields lists its
// problems; a problem with the document as a whole is reported on the field "(spec)".
func Parse(data []byte) (*metadata.JobSpec, error) {
	if len(data) > metadata.MaxSpecBytes {
		return nil, specError(fmt.Sprintf("larger than %d bytes", metadata.MaxSpecBytes))
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, specError("empty; send a JSON or YAML job spec")
	}
	// Every unknown field at once, with its line and a did-you-mean (the strict decoder below stops at the first).
	if unknown := unknownFields(data); len(unknown) > 0 {
		return nil, &metadata.SpecError{Fields: unknown}
	}
	format := "JSON"
	// JSON is decoded as sent, so that its syntax errors point into the user's document; anything else is YAML,
	// converted first.
	if trimmed[0] != '{' {
		format = "YAML"
		var err error
		if data, err = yamlToJSON(data); err != nil {
			return nil, specError(err.Error())
		}
	}
	var spec metadata.JobSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		// The decoder speaks of "json" even when the user sent YAML.
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return nil, specError(fmt.Sprintf("not a valid job spec (%s): %s", format, msg))
	}
	if dec.More() {
		return nil, specError("trailing data after the job spec")
	}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &spec, nil
}

// specError is a problem with the spec as a whole rather than one of its fields.
func specError(problem string) error {
	return &metadata.SpecError{Fields: []metadata.FieldError{{Field: "(spec)", Problem: problem}}}
}

// yamlToJSON converts a YAML document to JSON so that both forms go through one strict JSON decoder (unknown
// fields, duration strings), and a YAML spec means exactly what the equal JSON spec means.
func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not valid JSON or YAML: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("YAML that has no JSON form (use string keys): %v", err)
	}
	return b, nil
}
