package cli

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

// defaultEndpoint is where `corral dev` serves the API.
const defaultEndpoint = "http://127.0.0.1:8080"

// clientFlags are taken by every command that talks to a running cluster.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "endpoints", Value: defaultEndpoint, EnvVars: envVars("endpoints"),
			Usage: "comma-separated controller API URLs; calls fail over between them"},
		&cli.StringFlag{Name: "token", EnvVars: envVars("token"),
			Usage: "API bearer token (the content of the controllers' --api-token-file)"},
		&cli.DurationFlag{Name: "timeout", Value: client.DefaultTimeout, EnvVars: envVars("timeout"),
			Usage: "time limit of each request, failover included"},
		&cli.StringFlag{Name: "cacert", EnvVars: envVars("cacert"),
			Usage: "PEM file of the CA that https:// endpoints' certificates chain to (e.g. the cluster's ca.pem)"},
	}
}

// newClient builds a client from --endpoints, --token and --timeout.
func newClient(c *cli.Context) (*client.Client, error) {
	eps := splitList(c.String("endpoints"))
	if len(eps) == 0 {
		return nil, fmt.Errorf("--endpoints is empty; give the controllers' API URLs, e.g. --endpoints %s", defaultEndpoint)
	}
	if c.Duration("timeout") <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", c.Duration("timeout"))
	}
	var caPEM []byte
	if f := c.String("cacert"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read --cacert: %w", err)
		}
		caPEM = b
	}
	cl, err := client.New(client.Config{Endpoints: eps, Token: c.String("token"), Timeout: c.Duration("timeout"), CACert: caPEM})
	if err != nil {
		if errors.Is(err, client.ErrBadCACert) {
			return nil, fmt.Errorf("bad --cacert %s: no PEM certificate in it", c.String("cacert"))
		}
		return nil, fmt.Errorf("bad --endpoints: %w", err)
	}
	return cl, nil
}

// explain wraps a client error with what the user can do about it.
func explain(op string, err error) error {
	if err == nil {
		return nil
	}
	var hint string
	var dial *net.OpError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	switch {
	case errors.As(err, &unknownCA):
		hint = "the controller's HTTPS certificate is not signed by a CA this command trusts: pass --cacert with the CA that signed --http-tls-cert (e.g. the cluster's ca.pem)"
	case errors.As(err, &badHost):
		hint = "the controller's HTTPS certificate does not name the host in --endpoints: use a name it lists, or re-issue it with that host in --hosts"
	case strings.Contains(err.Error(), "on a worker: it serves"):
		hint = "that address is a worker's, which serves no API: point --endpoints at a controller's --http-addr"
	case strings.Contains(err.Error(), "on the metrics listener"):
		hint = "that address is a controller's --metrics-addr: point --endpoints at its --http-addr"
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		hint = "that controller serves plain HTTP: use an http:// endpoint"
	case errors.Is(err, client.ErrUnauthorized):
		hint = "pass the API token with --token or CORRAL_TOKEN"
	case errors.Is(err, client.ErrPermissionDenied):
		hint = "your token's policies do not grant this: ask an operator for a policy that does ('corral acl token self' shows yours)"
	case errors.Is(err, client.ErrNoLeader), errors.Is(err, client.ErrNotReady):
		hint = "the controllers have no leader right now; retry shortly and check 'corral status'"
	case errors.Is(err, client.ErrNoSpace):
		hint = "the storage quota is used up: delete keys or stop old jobs, then retry (docs/OPERATIONS.md, \"Storage quota\")"
	case errors.Is(err, client.ErrTooManyLeases):
		hint = "the lease cap is reached: revoke leases you no longer need"
	case errors.Is(err, client.ErrTimeout):
		hint = "the outcome is unknown: read the key before retrying a write"
	case errors.As(err, &dial) && dial.Op == "dial":
		hint = "is a controller running there? start one with 'corral dev' or point --endpoints at your cluster"
	}
	if hint == "" {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w (%s)", op, err, hint)
}

// printable returns s as is when it is printable on one terminal line, else Go-quoted, truncated to max runes.
func printable(s string, max int) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		s = strconv.Quote(s)
	}
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "..."
	}
	return s
}
