package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
)

func snapshotCommand() *cli.Command {
	return &cli.Command{
		Name:  "snapshot",
		Usage: "back up the cluster's state (save) or build a new cluster's data dirs from a backup (restore)",
		Subcommands: []*cli.Command{
			snapshotSaveCommand(), snapshotRestoreCommand(),
		},
		Action: groupCommand("snapshot", "save", "restore"),
	}
}

func snapshotSaveCommand() *cli.Command {
	return &cli.Command{
		Name:      "save",
		Usage:     "write a consistent backup (state, index, term, checksum) to FILE",
		ArgsUsage: "FILE",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			path := c.Args().First()
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := cl.SaveSnapshot(c.Context, &buf); err != nil {
				return explain("save snapshot", err)
			}
			b, err := roles.DecodeBackup(bytes.NewReader(buf.Bytes()))
			if err != nil {
				return fmt.Errorf("the controller sent a backup that does not verify: %w", err)
			}
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
				return fmt.Errorf("write %s: %w", tmp, err)
			}
			if err := os.Rename(tmp, path); err != nil {
				return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "saved snapshot at index %d, term %d (%d bytes, cluster %s) to %s\n",
				b.Header.Index, b.Header.Term, buf.Len(), b.Header.ClusterID, path)
			return err
		},
	}
}

func snapshotRestoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "create the data dir of one controller of a NEW cluster from a backup FILE",
		ArgsUsage: "FILE",
		Description: "Run it once per controller with the same FILE and --controllers, each with its own\n" +
			"--node-id and an empty --data-dir, then start them all with that --controllers list.\n" +
			"The new cluster keeps the data and gets a new cluster id.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", EnvVars: envVars("data-dir"), Usage: "empty data dir to create"},
			&cli.Uint64Flag{Name: "node-id", EnvVars: envVars("node-id"), Usage: "this controller's id"},
			&cli.StringFlag{Name: "controllers", EnvVars: envVars("controllers"),
				Usage: "the new cluster's controllers as ID@HOST:PORT,..."},
		},
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			dir, id := c.String("data-dir"), c.Uint64("node-id")
			switch {
			case dir == "":
				return errors.New("missing --data-dir: the empty data dir to create")
			case id == 0:
				return errors.New("missing --node-id")
			}
			peers, err := roles.ParsePeers(c.String("controllers"))
			if err != nil {
				return fmt.Errorf("bad --controllers: %w", err)
			}
			f, err := os.Open(c.Args().First())
			if err != nil {
				return fmt.Errorf("open backup: %w", err)
			}
			defer f.Close()
			b, err := roles.DecodeBackup(f)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Args().First(), err)
			}
			if err := roles.RestoreDataDir(dir, id, peers, b); err != nil {
				return fmt.Errorf("restore into %s: %w", dir, err)
			}
			abs, _ := filepath.Abs(dir)
			_, err = fmt.Fprintf(c.App.Writer, "restored index %d (term %d) of cluster %s into %s for controller %d\n",
				b.Header.Index, b.Header.Term, b.Header.ClusterID, abs, id)
			return err
		},
	}
}
