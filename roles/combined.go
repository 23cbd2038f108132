package roles

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/worker"
)

// RunCombined runs a controller and a worker in one process until ctx
// ends: for development and very small clusters, where a separate worker
// machine is not worth it. The worker connects to the controllers like any
// other (over QUIC, its own session) and leaves before the controller
// stops. wcfg.Controllers defaults to the controllers' cluster addresses,
// this one's first; its metrics join the controller's registry. With
// ReloadTLSOn, each reload request reloads the controller's TLS dir, then
// the worker's.
func RunCombined(ctx context.Context, ccfg controller.Config, wcfg worker.Config, opts ...RunOption) error {
	o := runOptions(opts)
	c, err := controller.Start(ccfg)
	if err != nil {
		return err
	}
	if len(wcfg.Controllers) == 0 {
		wcfg.Controllers = c.ClusterAddrs()
	}
	if wcfg.DataDir == "" {
		wcfg.DataDir = ccfg.DataDir
	}
	if wcfg.TLSDir == "" {
		wcfg.TLSDir = ccfg.TLSDir
	}
	if wcfg.Registry == nil {
		wcfg.Registry = c.Registry()
	}
	if wcfg.Logger == nil {
		wcfg.Logger = ccfg.Logger
	}
	w, err := worker.Start(wcfg)
	if err != nil {
		c.Close()
		return fmt.Errorf("start worker: %w", err)
	}
	stopReloads := serveReloads(o.reloadTLS, c.ReloadTLS, w.ReloadTLS)
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-c.Failed():
	}
	stopReloads()
	werr := w.Close() // leave while the controller can still commit it
	c.Close()
	return errors.Join(failed, werr)
}
