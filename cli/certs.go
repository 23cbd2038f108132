package cli

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

func certsCommand() *cli.Command {
	return &cli.Command{
		Name:  "certs",
		Usage: "make the cluster CA and issue node certificates (mutual TLS between controllers and workers)",
		Description: "Production: make the CA once on a controller host, issue one certificate per node, and copy\n" +
			"each node only its own out dir (ca.pem, node.pem, node-key.pem). ca-key.pem never leaves the CA dir.\n" +
			"   corral certs ca --dir /etc/corral/ca --cluster prod\n" +
			"   corral certs issue --ca-dir /etc/corral/ca --role controller --id 1 --hosts 10.0.0.1 --out c1-tls\n" +
			"   corral certs issue --ca-dir /etc/corral/ca --role worker --id w-1 --out w1-tls",
		Subcommands: []*cli.Command{certsCACommand(), certsIssueCommand(), certsCreateCommand(),
			certsRevokeCommand(), certsRevokedCommand()},
		Action: groupCommand("certs", "ca", "issue", "create", "revoke", "revoked"),
	}
}

func certsCACommand() *cli.Command {
	return &cli.Command{
		Name:  "ca",
		Usage: "make the cluster's CA (ca.pem, ca-key.pem) in --dir, once",
		Description: "The CA names the cluster (--cluster); every certificate it issues names it too, and nodes refuse\n" +
			"certificates that name another cluster. Make one CA per cluster; keep --dir on a controller host or offline.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", EnvVars: envVars("dir"), Usage: "directory to write ca.pem and ca-key.pem to"},
			&cli.StringFlag{Name: "cluster", EnvVars: envVars("cluster"),
				Usage: "the cluster's name (lower-case letters, digits, '-'); empty picks a random one"},
			// One-shot setup containers (deploy/compose) run on every start:
			// they need a step that succeeds once the CA exists.
			&cli.BoolFlag{Name: "if-missing", EnvVars: envVars("if-missing"),
				Usage: "keep a CA --dir already holds (it must name --cluster, if given) instead of failing"},
		},
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			dir := c.String("dir")
			if dir == "" {
				return errors.New("missing --dir: where to keep the CA, e.g. --dir /etc/corral/ca")
			}
			if c.Bool("if-missing") {
				if _, err := os.Stat(filepath.Join(dir, transport.CAFile)); err == nil {
					ca, err := transport.LoadCA(dir)
					if err != nil {
						return fmt.Errorf("--if-missing: %s holds a CA that cannot be used: %w; move it away to make a new one", dir, err)
					}
					if want := c.String("cluster"); want != "" && ca.Cluster != want {
						return fmt.Errorf("--if-missing: the CA in %s names cluster %q, not --cluster %q; use another --dir or drop --cluster", dir, ca.Cluster, want)
					}
					_, err = fmt.Fprintf(c.App.Writer, "kept the CA of cluster %s already in %s\n", ca.Cluster, dir)
					return err
				}
			}
			if err := transport.CreateCA(dir, c.String("cluster")); err != nil {
				return fmt.Errorf("make CA in %s: %w", dir, err)
			}
			_, err := fmt.Fprintf(c.App.Writer, "wrote ca.pem and ca-key.pem to %s; keep ca-key.pem off workers\n", dir)
			return err
		},
	}
}

// certRoleFlags are --role, --id and --hosts, shared by issue and create.
func certRoleFlags(defaultRole string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "role", Value: defaultRole, EnvVars: envVars("role"), Usage: "controller or worker"},
		&cli.StringFlag{Name: "id", EnvVars: envVars("id"),
			Usage: "the node's id: a controller's --node-id, or a worker's id (the worker then runs under it)"},
		&cli.StringFlag{Name: "hosts", Value: "127.0.0.1,localhost", EnvVars: envVars("hosts"),
			Usage: "comma-separated IPs and DNS names the node certificate is valid for"},
	}
}

func parseCertRole(c *cli.Context) (transport.Role, string, []string, error) {
	role := transport.Role(c.String("role"))
	if role != transport.RoleController && role != transport.RoleWorker {
		return "", "", nil, fmt.Errorf("--role %q: want controller or worker", role)
	}
	id := c.String("id")
	if id == "" {
		return "", "", nil, fmt.Errorf("missing --id: the %s's id, e.g. --id 1 for a controller or --id w-1 for a worker", role)
	}
	hosts := splitList(c.String("hosts"))
	if len(hosts) == 0 {
		return "", "", nil, errors.New("--hosts is empty: list the node's IPs and DNS names, e.g. --hosts 127.0.0.1,localhost")
	}
	return role, id, hosts, nil
}

func certsIssueCommand() *cli.Command {
	return &cli.Command{
		Name:  "issue",
		Usage: "issue a node certificate for --role and --id with the CA in --ca-dir, into --out",
		Description: "--out gets ca.pem, node.pem and node-key.pem, never ca-key.pem: copy it to that node as its --tls-dir.\n" +
			"Example: corral certs issue --ca-dir ca --role controller --id 2 --hosts 10.0.0.2,c2.internal --out c2-tls",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "ca-dir", EnvVars: envVars("ca-dir"), Usage: "directory holding ca.pem and ca-key.pem ('corral certs ca')"},
			&cli.StringFlag{Name: "out", EnvVars: envVars("out"), Usage: "directory to write the node's TLS files to"},
		}, certRoleFlags("")...),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			caDir, out := c.String("ca-dir"), c.String("out")
			if caDir == "" {
				return errors.New("missing --ca-dir: the CA made by 'corral certs ca --dir DIR'")
			}
			if out == "" {
				return errors.New("missing --out: where to write the node's certificate, e.g. --out c1-tls")
			}
			role, id, hosts, err := parseCertRole(c)
			if err != nil {
				return err
			}
			ident, err := transport.IssueCert(caDir, role, id, hosts, out)
			if err != nil {
				return fmt.Errorf("issue certificate: %w", err)
			}
			cert, err := readCertFile(filepath.Join(out, transport.NodeFile))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "wrote ca.pem, node.pem and node-key.pem for %s to %s (hosts: %s; serial %s)\n",
				ident, out, strings.Join(hosts, ", "), metadata.SerialHex(cert.SerialNumber))
			return err
		},
	}
}

func certsCreateCommand() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "development shortcut: a CA (made, or reused if --dir has one) and a node certificate, all in --dir",
		Description: "The CA key stays in --dir beside the node's key, so use this for one machine or tests only;\n" +
			"production uses 'certs ca' and 'certs issue'. Example:\n" +
			"   corral certs create --dir /tmp/tls --role controller --id 1",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "dir", EnvVars: envVars("dir"), Usage: "directory to write the PEM files to"},
		}, certRoleFlags(string(transport.RoleController))...),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			dir := c.String("dir")
			if dir == "" {
				return errors.New("missing --dir: where to write the certificates, e.g. --dir data/tls")
			}
			role, id, hosts, err := parseCertRole(c)
			if err != nil {
				return err
			}
			if err := transport.CreateCerts(dir, role, id, hosts); err != nil {
				return fmt.Errorf("create certificates in %s: %w", dir, err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "wrote ca.pem, ca-key.pem, node.pem and node-key.pem (%s %s) to %s (hosts: %s)\n",
				role, id, dir, strings.Join(hosts, ", "))
			return err
		},
	}
}

func certsRevokeCommand() *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "deny a certificate (SERIAL, or --cert FILE) or every certificate of a worker (--worker ID)",
		ArgsUsage: "[SERIAL]",
		Description: "Controllers refuse the certificate from their next handshake and close its open connections, so a\n" +
			"revoked worker stops heartbeating and is fenced after its session timeout. The deny-list is replicated.\n" +
			"Examples: corral certs revoke 3a9f...; corral certs revoke --cert w1-tls/node.pem; corral certs revoke --worker w-1",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "worker", EnvVars: envVars("worker"), Usage: "revoke every certificate that names this worker id"},
			&cli.StringFlag{Name: "cert", EnvVars: envVars("cert"), Usage: "PEM certificate file whose serial to revoke"},
			&cli.StringFlag{Name: "reason", EnvVars: envVars("reason"), Usage: "why, kept with the entry (at most 256 bytes)"}),
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return errors.New("certs revoke takes at most one SERIAL, and flags go before SERIAL; see --help")
			}
			serial, worker := c.Args().First(), c.String("worker")
			if f := c.String("cert"); f != "" {
				if serial != "" {
					return errors.New("give a SERIAL or --cert, not both")
				}
				cert, err := readCertFile(f)
				if err != nil {
					return err
				}
				serial = metadata.SerialHex(cert.SerialNumber)
			}
			if (serial == "") == (worker == "") {
				return errors.New("say what to revoke: a SERIAL, --cert FILE or --worker ID (exactly one)")
			}
			if serial != "" {
				n, err := metadata.NormalizeSerial(serial)
				if err != nil {
					return fmt.Errorf("%w; or pass --cert FILE", err)
				}
				serial = n
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			r, err := cl.RevokeCert(c.Context, serial, worker, c.String("reason"))
			if err != nil {
				return explain("revoke", err)
			}
			what := "certificate " + r.Serial
			if r.Worker != "" {
				what = "every certificate of worker " + r.Worker
			}
			_, err = fmt.Fprintf(c.App.Writer, "revoked %s: controllers refuse it from now on\n", what)
			return err
		},
	}
}

func certsRevokedCommand() *cli.Command {
	return &cli.Command{
		Name:  "revoked",
		Usage: "list the certificate deny-list",
		Flags: append(clientFlags(), outputFlag("table")),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			list, err := cl.Revocations(c.Context)
			if err != nil {
				return explain("list revoked certificates", err)
			}
			if asJSON {
				if list == nil {
					list = []client.Revocation{}
				}
				return printJSON(c.App.Writer, map[string]any{"revoked": list})
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERIAL\tWORKER\tREVOKED\tREASON")
			for _, r := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", dash(r.Serial), dash(r.Worker),
					time.UnixMilli(r.AtMS).UTC().Format(time.RFC3339), printable(dash(r.Reason), 80))
			}
			return tw.Flush()
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readCertFile parses the first certificate of a PEM file.
func readCertFile(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate %s: %w", path, err)
	}
	return cert, nil
}
