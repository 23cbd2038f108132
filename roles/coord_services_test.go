package roles

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
	"github.com/stretchr/testify/require"
)

// TestCoord_WorkerServiceListsAliveWorkersWithLoad: the corral-worker service
// is the worker registry, with each worker's load (on the leader; followers
// forward this listing over HTTP, which the in-memory cluster lacks).
func TestCoord_WorkerServiceListsAliveWorkersWithLoad(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	tw := wc.StartWorker("", nil)
	wc.WaitAlive(tw)
	lead := wc.Leader()
	get := func(c *controller.Controller) (int, map[string]any) {
		rec := httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/services/corral-worker", nil))
		var out map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
		return rec.Code, out
	}
	require.Eventually(t, func() bool {
		code, out := get(lead)
		inst, _ := out["instances"].([]any)
		if code != 200 || len(inst) != 1 {
			return false
		}
		w := inst[0].(map[string]any)["worker"].(map[string]any)
		load, _ := w["load"].(map[string]any)
		return inst[0].(map[string]any)["instance"] == tw.ID() && load != nil && load["running_tasks"] == float64(1)
	}, 10*time.Second, 10*time.Millisecond)
}
