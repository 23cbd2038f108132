package cli

import (
	"encoding/json"
	"fmt"
	"time"
)

// specView is the part of a job's spec that `corral job status` shows, decoded from the spec the API returns.
// It is the command line's own type rather than the server's metadata.JobSpec so that what the CLI displays does
// not change with the state machine's internals; its JSON names are the job-spec wire format (docs/API.md#job-spec),
// and fields it does not show are ignored.
type specView struct {
	Task        taskView         `json:"task"`
	Constraints []constraintView `json:"constraints"`
	Placement   string           `json:"placement"`
	Restart     restartView      `json:"restart"`
	// Reschedule is nil when the spec leaves it unset, which means true.
	Reschedule *bool `json:"reschedule"`
	Singleton  bool  `json:"singleton"`
}

// taskView is the displayed part of a spec's task.
type taskView struct {
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Workdir   string            `json:"workdir"`
	Resources struct {
		CPUMillis int64 `json:"cpu_millis"`
		MemoryMB  int64 `json:"memory_mb"`
	} `json:"resources"`
}

// constraintView is one placement constraint on worker labels.
type constraintView struct {
	Label    string   `json:"label"`
	Operator string   `json:"operator"`
	Value    string   `json:"value"`
	Values   []string `json:"values"`
}

// restartView is a spec's restart policy.
type restartView struct {
	Attempts int          `json:"attempts"`
	Delay    durationView `json:"delay"`
	Backoff  float64      `json:"backoff"`
	MaxDelay durationView `json:"max_delay"`
}

// durationView reads a duration the way the API writes it, as a Go duration string ("1m30s").
type durationView time.Duration

// UnmarshalJSON accepts a duration string such as "5s".
func (d *durationView) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: %w", s, err)
	}
	*d = durationView(v)
	return nil
}
