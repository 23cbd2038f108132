package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (w *Worker) startHTTP() error {
	ln, err := net.Listen("tcp", w.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", w.cfg.HTTPAddr, err)
	}
	w.httpLn = ln
	w.httpSrv = &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := w.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("worker HTTP server stopped", "err", err)
		}
	}()
	return nil
}

// HTTPAddr returns the address of the worker's HTTP server ("" if none).
func (w *Worker) HTTPAddr() string {
	if w.httpLn == nil {
		return ""
	}
	return w.httpLn.Addr().String()
}

// Handler serves /healthz, /readyz (200 only while registered and alive)
// and /metrics. They expose no secrets and need no token.
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		st := w.Status()
		body := map[string]any{"worker_id": st.ID, "epoch": st.Epoch, "controller_epoch": st.ControllerEpoch,
			"incarnation": st.Incarnation, "leader": st.Leader}
		if !st.Alive {
			body["error"], body["code"] = "worker is fenced: not registered with a leader (yet)", "not_ready"
			writeJSON(rw, http.StatusServiceUnavailable, body)
			return
		}
		body["status"] = "ready"
		writeJSON(rw, http.StatusOK, body)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		writeJSON(rw, http.StatusNotFound, map[string]string{"code": "not_found",
			"error": fmt.Sprintf("no route for %s %s on a worker: it serves /healthz, /readyz and /metrics", r.Method, r.URL.Path)})
	})
	return mux
}

// writeJSON answers with v as JSON. The worker's three endpoints are all it
// serves, so it keeps this two-line helper instead of sharing the API's.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
