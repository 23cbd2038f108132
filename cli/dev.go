package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run a throwaway one-node cluster on this machine for trying corral out",
		Description: "Without --data-dir the data lives in a fresh temporary directory that is removed on exit.\n" +
			"Example: corral dev --http-addr 127.0.0.1:9090",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "data-dir", EnvVars: envVars("data-dir"),
				Usage: "keep the data here (reused across runs); default: a fresh temporary directory"},
			&cli.StringFlag{Name: "http-addr", Value: "127.0.0.1:8080", EnvVars: envVars("http-addr"),
				Usage: "HOST:PORT for the HTTP API"},
			&cli.StringFlag{Name: "cluster-addr", Value: "127.0.0.1:7080", EnvVars: envVars("cluster-addr"),
				Usage: "HOST:PORT for controller-to-controller traffic (QUIC)"},
		}, logFlags()...),
		Action: devAction,
	}
}

func devAction(c *cli.Context) error {
	if err := wantArgs(c, 0); err != nil {
		return err
	}
	logger, err := newLogger(c, c.App.ErrWriter)
	if err != nil {
		return err
	}
	dataDir, temporary := c.String("data-dir"), false
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "corral-dev-"); err != nil {
			return fmt.Errorf("create temporary data dir: %w", err)
		}
		temporary = true
		defer func() {
			if err := os.RemoveAll(dataDir); err != nil {
				logger.Warn("could not remove temporary data dir", "dir", dataDir, "err", err)
			}
		}()
	}
	tlsDir := filepath.Join(dataDir, "tls")
	if err := transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1", "localhost"}); err != nil {
		return fmt.Errorf("create dev certificates: %w", err)
	}
	clusterAddr := c.String("cluster-addr")
	ctrl, err := roles.StartController(roles.ControllerConfig{
		NodeID:      1,
		DataDir:     dataDir,
		ClusterAddr: clusterAddr,
		HTTPAddr:    c.String("http-addr"),
		Peers:       map[uint64]string{1: clusterAddr},
		TLSDir:      tlsDir,
		Logger:      logger,
	})
	if err != nil {
		return fmt.Errorf("start dev controller: %w", err)
	}
	printDevHints(c.App.Writer, ctrl.HTTPAddr(), dataDir, temporary)

	ctx, stop := signalContext(c.Context)
	defer stop()
	select {
	case <-ctx.Done():
		logger.Info("stopping dev cluster")
		return ctrl.Close()
	case err := <-ctrl.Failed():
		_ = ctrl.Close()
		return fmt.Errorf("dev controller failed: %w", err)
	}
}

// printDevHints tells a first-time user what to try against the dev cluster.
func printDevHints(w io.Writer, httpAddr, dataDir string, temporary bool) {
	base := "http://" + httpAddr
	eps := ""
	if base != defaultEndpoint {
		eps = " --endpoints " + base
	}
	keep := "kept after exit; pass the same --data-dir to continue"
	if temporary {
		keep = "removed on exit; pass --data-dir to keep it"
	}
	fmt.Fprintf(w, `corral dev: a one-node cluster is running.
  API:        %[1]s
  data dir:   %[2]s (%[3]s)

Try it:
  curl -X PUT -H 'X-Corral-Client: curl' --data-binary 'hello' %[1]s/v1/kv/greeting
  curl %[1]s/v1/kv/greeting
  corral kv put%[4]s greeting hello
  corral kv get%[4]s greeting
  corral kv ls%[4]s gr
  corral status%[4]s
  corral bench kv%[4]s --clients 8 --duration 5s

Watch it:
  cluster:    %[1]s/v1/cluster
  readiness:  %[1]s/readyz
  metrics:    %[1]s/metrics

Press Ctrl-C to stop.
`, base, dataDir, keep, eps)
}
