package api

import (
	"net/http/pprof"
)

// registerPprof serves the runtime profiles. They are opt-in (a CPU
// profile costs the leader CPU while it runs) and sit behind the API
// token like every other route.
func registerPprof(mux *routeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
