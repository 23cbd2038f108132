package roles

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
)

// The tests in this package run whole controllers and workers in one
// process (roles/internal/testcluster): they are the only tests that need
// both trees, as combined mode is the only code that does.

// replicated returns the worker as the given controller's state has it.
func replicated(c *controller.Controller, id string) metadata.Worker {
	w, _ := c.State().Worker(id)
	return w
}

// getWorkers calls GET /v1/workers on c's handler.
func getWorkers(t *testing.T, c *controller.Controller) client.WorkerList {
	t.Helper()
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/workers", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out client.WorkerList
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return out
}

// waitFencings polls the leader's fencings counter, which moves just after
// the fence it counts has applied.
func waitFencings(t *testing.T, c *controller.Controller, n float64) {
	t.Helper()
	require.Eventually(t, func() bool { return fencings(t, c) == n }, 5*time.Second, 2*time.Millisecond,
		"fencings counter: %v, want %v", fencings(t, c), n)
}

func fencings(t *testing.T, c *controller.Controller) float64 {
	return testcluster.Metric(t, c.Registry(), "corral_workers_fencings_total", "session_timeout")
}
