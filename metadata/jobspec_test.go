package metadata

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The parsing tests live with the parser in metadata/jobspec.

func TestJobSpec_ConstraintsMatch(t *testing.T) {
	spec := &JobSpec{Constraints: []Constraint{
		{Label: "zone", Operator: "in", Values: []string{"a", "b"}},
		{Label: "gpu", Operator: "exists"},
		{Label: "tier", Operator: "!=", Value: "spot"},
		{Label: "os", Operator: "=", Value: "linux"},
	}}
	require.True(t, spec.Matches(map[string]string{"zone": "a", "gpu": "1", "os": "linux"}))
	require.False(t, spec.Matches(map[string]string{"zone": "c", "gpu": "1", "os": "linux"}))
	require.False(t, spec.Matches(map[string]string{"zone": "a", "os": "linux"}))
	require.False(t, spec.Matches(map[string]string{"zone": "a", "gpu": "1", "os": "linux", "tier": "spot"}))
	require.False(t, spec.Matches(map[string]string{"zone": "a", "gpu": "1"}))
}
