package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Job types.
const (
	JobService = "service" // runs until stopped; restarted when it exits
	JobBatch   = "batch"   // runs to completion
)

// Placement strategies.
const (
	PlaceBinpack = "binpack" // fill the busiest feasible worker first
	PlaceSpread  = "spread"  // prefer the least loaded feasible worker
)

// Limits on a job spec, so one submission cannot bloat the replicated state.
const (
	MaxJobNameLen   = 128
	MaxJobCount     = 100000
	MaxSpecBytes    = 256 << 10
	MaxKillTimeout  = 10 * time.Minute
	MaxRestartDelay = time.Hour
)

// Duration is a time.Duration written as a Go duration string ("5s") in
// JSON and YAML.
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a duration string ("5s", "1m").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"5s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: want e.g. \"5s\" or \"1m30s\"", s)
	}
	*d = Duration(v)
	return nil
}

// Resources a task needs on its worker.
type Resources struct {
	CPUMillis int64 `json:"cpu_millis"`
	MemoryMB  int64 `json:"memory_mb"`
}

// Task is the process an allocation runs.
type Task struct {
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Workdir     string            `json:"workdir,omitempty"`
	Resources   Resources         `json:"resources"`
	KillTimeout Duration          `json:"kill_timeout,omitempty"`
	// User is the user the task runs as; "" means the worker's task user
	// (--task-user). A worker runs a task as another user only if its
	// --allowed-task-users lists it, and otherwise fails the allocation.
	User string `json:"user,omitempty"`
}

// Constraint restricts placement by worker labels.
type Constraint struct {
	Label    string   `json:"label"`
	Operator string   `json:"operator"` // =, !=, in, exists
	Value    string   `json:"value,omitempty"`
	Values   []string `json:"values,omitempty"`
}

// RestartPolicy restarts a failed task on the same worker.
type RestartPolicy struct {
	Attempts int      `json:"attempts"`
	Delay    Duration `json:"delay,omitempty"`
	// Backoff multiplies the delay after every attempt (1 = constant).
	Backoff  float64  `json:"backoff,omitempty"`
	MaxDelay Duration `json:"max_delay,omitempty"`
}

// JobSpec is what a user submits. Package metadata/jobspec parses one from the user's JSON or YAML; here it
// is only defaulted, validated and applied, so the state machine needs no YAML parser.
type JobSpec struct {
	Name        string        `json:"name"`
	Type        string        `json:"type"`
	Count       int           `json:"count"`
	Task        Task          `json:"task"`
	Constraints []Constraint  `json:"constraints,omitempty"`
	Placement   string        `json:"placement,omitempty"`
	Restart     RestartPolicy `json:"restart"`
	// Reschedule moves an allocation to another worker when its worker is
	// fenced or its restarts are spent. Unset means true, as in Nomad: a
	// service whose worker died is expected to come back elsewhere.
	Reschedule *bool `json:"reschedule,omitempty"`
	// Singleton guarantees at most one instance runs anywhere at any time.
	Singleton bool `json:"singleton,omitempty"`
}

// FieldError names one invalid field of a job spec.
type FieldError struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// SpecError lists every problem found in a job spec.
type SpecError struct{ Fields []FieldError }

func (e *SpecError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Problem
	}
	return "invalid job spec: " + strings.Join(parts, "; ")
}

// Is makes a SpecError match ErrInvalid.
func (e *SpecError) Is(target error) bool { return target == ErrInvalid }

var jobNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// Defaults fills unset optional fields.
func (s *JobSpec) Defaults() {
	if s.Type == "" {
		s.Type = JobService
	}
	if s.Count == 0 && !s.Singleton {
		s.Count = 1
	}
	if s.Singleton && s.Count == 0 {
		s.Count = 1
	}
	if s.Reschedule == nil {
		t := true
		s.Reschedule = &t
	}
	if s.Placement == "" {
		s.Placement = PlaceSpread
	}
	if s.Task.KillTimeout == 0 {
		s.Task.KillTimeout = Duration(5 * time.Second)
	}
	if s.Restart.Delay == 0 {
		s.Restart.Delay = Duration(time.Second)
	}
	if s.Restart.Backoff == 0 {
		s.Restart.Backoff = 2
	}
	if s.Restart.MaxDelay == 0 {
		s.Restart.MaxDelay = Duration(time.Minute)
	}
}

// Validate reports every invalid field, each named by its JSON path.
func (s *JobSpec) Validate() error {
	var errs []FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, FieldError{field, fmt.Sprintf(format, a...)})
	}
	switch {
	case s.Name == "":
		add("name", "is required")
	case len(s.Name) > MaxJobNameLen:
		add("name", "is longer than %d characters", MaxJobNameLen)
	case !jobNameRE.MatchString(s.Name):
		add("name", "may only contain letters, digits, '.', '_' and '-', starting with a letter or digit")
	}
	if s.Type != JobService && s.Type != JobBatch {
		add("type", "must be %q or %q, got %q", JobService, JobBatch, s.Type)
	}
	switch {
	case s.Count < 1 || s.Count > MaxJobCount:
		add("count", "must be between 1 and %d, got %d", MaxJobCount, s.Count)
	case s.Singleton && s.Count != 1:
		add("count", "must be 1 for a singleton job, got %d", s.Count)
	}
	s.Task.validate(add)
	for i, c := range s.Constraints {
		c.validate(fmt.Sprintf("constraints[%d]", i), add)
	}
	if s.Placement != PlaceBinpack && s.Placement != PlaceSpread {
		add("placement", "must be %q or %q, got %q", PlaceBinpack, PlaceSpread, s.Placement)
	}
	r := s.Restart
	if r.Attempts < 0 || r.Attempts > 1000 {
		add("restart.attempts", "must be between 0 and 1000, got %d", r.Attempts)
	}
	if r.Delay < 0 || time.Duration(r.Delay) > MaxRestartDelay {
		add("restart.delay", "must be between 0 and %v", MaxRestartDelay)
	}
	if r.Backoff < 1 || r.Backoff > 10 {
		add("restart.backoff", "must be between 1 and 10, got %g", r.Backoff)
	}
	if r.MaxDelay < r.Delay || time.Duration(r.MaxDelay) > MaxRestartDelay {
		add("restart.max_delay", "must be between restart.delay and %v", MaxRestartDelay)
	}
	if len(errs) > 0 {
		return &SpecError{errs}
	}
	return nil
}

func (t *Task) validate(add func(string, string, ...any)) {
	if strings.TrimSpace(t.Command) == "" {
		add("task.command", "is required")
	}
	if strings.ContainsRune(t.Command, 0) {
		add("task.command", "contains a NUL byte")
	}
	for i, a := range t.Args {
		if strings.ContainsRune(a, 0) {
			add(fmt.Sprintf("task.args[%d]", i), "contains a NUL byte")
		}
	}
	keys := make([]string, 0, len(t.Env))
	for k := range t.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(t.Env[k], 0) {
			add("task.env."+k, "names must be non-empty without '=' or NUL, values without NUL")
		}
	}
	if t.Resources.CPUMillis < 0 {
		add("task.resources.cpu_millis", "must not be negative, got %d", t.Resources.CPUMillis)
	}
	if t.Resources.MemoryMB < 0 {
		add("task.resources.memory_mb", "must not be negative, got %d", t.Resources.MemoryMB)
	}
	if t.KillTimeout < 0 || time.Duration(t.KillTimeout) > MaxKillTimeout {
		add("task.kill_timeout", "must be between 0 and %v", MaxKillTimeout)
	}
	if t.User != "" && !validUserName(t.User) {
		add("task.user", "must be a user name of at most %d letters, digits, '_', '.' or '-', not starting with '-'", maxUserName)
	}
}

// maxUserName bounds task.user (Linux user names are at most 32 bytes).
const maxUserName = 32

// validUserName reports whether s can name a user on a worker: a POSIX
// portable user name (a numeric uid is one too).
func validUserName(s string) bool {
	if s == "" || len(s) > maxUserName || s[0] == '-' {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

func (c *Constraint) validate(field string, add func(string, string, ...any)) {
	if c.Label == "" {
		add(field+".label", "is required")
	}
	switch c.Operator {
	case "=", "!=":
		if len(c.Values) > 0 {
			add(field+".values", "is only for the \"in\" operator; use value")
		}
	case "in":
		if len(c.Values) == 0 {
			add(field+".values", "must list at least one value for \"in\"")
		}
	case "exists":
		if c.Value != "" || len(c.Values) > 0 {
			add(field+".value", "must be empty for \"exists\"")
		}
	default:
		add(field+".operator", "must be one of =, !=, in, exists; got %q", c.Operator)
	}
}

// Matches reports whether a worker with labels satisfies every constraint.
func (s *JobSpec) Matches(labels map[string]string) bool {
	for _, c := range s.Constraints {
		v, ok := labels[c.Label]
		switch c.Operator {
		case "=":
			if !ok || v != c.Value {
				return false
			}
		case "!=":
			if ok && v == c.Value {
				return false
			}
		case "in":
			found := false
			for _, want := range c.Values {
				found = found || (ok && v == want)
			}
			if !found {
				return false
			}
		case "exists":
			if !ok {
				return false
			}
		}
	}
	return true
}

// Reschedules reports whether lost or failed allocations are replaced.
func (s *JobSpec) Reschedules() bool { return s.Reschedule == nil || *s.Reschedule }

// Equal reports whether two specs are the same submission (a resubmission
// of an equal spec is a no-op).
func (s *JobSpec) Equal(o *JobSpec) bool {
	a, errA := json.Marshal(s)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// SpecFields returns the field problems inside err, or nil.
func SpecFields(err error) []FieldError {
	var se *SpecError
	if errors.As(err, &se) {
		return se.Fields
	}
	return nil
}
