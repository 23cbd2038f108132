package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// composeImage is the tag the compose test builds: its own, so that it
// never runs an image someone else tagged corral:dev from other sources.
const composeImage = "corral:compose-test"

// composeCluster is one docker-compose project made from
// deploy/compose/docker-compose.yml, under a name of its own so that
// nothing else on the Docker engine is touched.
type composeCluster struct {
	t       *testing.T
	project string
	file    string
	env     []string
	token   string
	caPEM   []byte
	apiAddr map[int]string // controller id -> 127.0.0.1:port its API is published on
	single  map[int]*client.Client
}

// requireDocker skips the test where no Docker engine runs, and fails it
// where one runs but docker-compose is missing (CI installs it).
func requireDocker(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker command: the compose test needs a Docker engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine reachable (docker info: %v: %s)", err, lastLine(out))
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Fatal("a Docker engine runs but docker-compose is missing: install it (apt-get install docker-compose)")
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// buildComposeImage runs `make image` in the repository root and checks
// what the issue asks of the image: under 50 MB, not root.
func buildComposeImage(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", "..", "image", "IMAGE="+composeImage)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make image:\n%s", out)
	out, err = exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Size}} {{.Config.User}}", composeImage).Output()
	require.NoError(t, err)
	var size int64
	var user string
	_, err = fmt.Sscan(string(out), &size, &user)
	require.NoError(t, err, "docker image inspect: %q", out)
	require.Less(t, size, int64(50_000_000), "the image must stay under 50 MB")
	require.Equal(t, "65532:65532", user, "the image must not run as root")
}

// startCompose brings the cluster up under a fresh project name and
// registers its removal (containers, network and volumes), whatever the
// test's outcome. The controllers' API ports are left to Docker, so that
// parallel runs cannot collide.
func startCompose(t *testing.T) *composeCluster {
	t.Helper()
	var r [4]byte
	_, err := rand.Read(r[:])
	require.NoError(t, err)
	file, err := filepath.Abs(filepath.Join("..", "deploy", "compose", "docker-compose.yml"))
	require.NoError(t, err)
	var tok [16]byte
	_, err = rand.Read(tok[:])
	require.NoError(t, err)
	token := hex.EncodeToString(tok[:])
	tokenFile := filepath.Join(t.TempDir(), "api-token")
	// 0644: the file is bind-mounted and read by the containers' user
	// (65532); the test's temporary directory keeps it private.
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o644))
	require.NoError(t, os.Chmod(tokenFile, 0o644)) // the umask may have narrowed it

	c := &composeCluster{
		t: t, project: "corraltest-" + hex.EncodeToString(r[:]), file: file, token: token,
		apiAddr: map[int]string{}, single: map[int]*client.Client{},
	}
	c.env = append(os.Environ(),
		"CORRAL_IMAGE="+composeImage,
		"CORRAL_API_TOKEN_HOST_FILE="+tokenFile,
		"CORRAL_HTTP_PORT_1=", "CORRAL_HTTP_PORT_2=", "CORRAL_HTTP_PORT_3=",
		"CORRAL_TOKEN="+token, // for `docker exec -e CORRAL_TOKEN`: off the command line
	)
	t.Cleanup(c.down)
	_, err = c.compose(3*time.Minute, "up", "-d")
	require.NoError(t, err)

	for id := 1; id <= 3; id++ {
		out, err := c.compose(30*time.Second, "port", fmt.Sprintf("controller-%d", id), "8080")
		require.NoError(t, err)
		c.apiAddr[id] = strings.TrimSpace(out)
	}
	out, err := c.docker(30*time.Second, "cp", c.container("controller-1")+":/tls/ca.pem", "-")
	require.NoError(t, err)
	tr := tar.NewReader(strings.NewReader(out))
	_, err = tr.Next()
	require.NoError(t, err, "docker cp of ca.pem gave no tar entry")
	c.caPEM, err = io.ReadAll(tr)
	require.NoError(t, err)
	return c
}

// down removes the project; on failure it first saves every container's
// log to integration/artifacts/<test>/compose.log.
func (c *composeCluster) down() {
	if c.t.Failed() {
		if out, err := c.compose(time.Minute, "logs", "--no-color", "--timestamps"); err == nil {
			dir := filepath.Join("artifacts", strings.ReplaceAll(c.t.Name(), "/", "_"))
			if os.MkdirAll(dir, 0o755) == nil && os.WriteFile(filepath.Join(dir, "compose.log"), []byte(out), 0o644) == nil {
				c.t.Logf("container logs saved to integration/%s/compose.log", dir)
			}
		}
	}
	if _, err := c.compose(2*time.Minute, "down", "-v", "--remove-orphans", "-t", "2"); err != nil {
		c.t.Errorf("remove compose project %s: %v; remove it by hand: docker-compose -p %s -f %s down -v", c.project, err, c.project, c.file)
	}
}

// compose runs docker-compose on this project.
func (c *composeCluster) compose(timeout time.Duration, args ...string) (string, error) {
	return c.run(timeout, "docker-compose", append([]string{"-p", c.project, "-f", c.file, "--ansi", "never"}, args...)...)
}

// docker runs the docker command line.
func (c *composeCluster) docker(timeout time.Duration, args ...string) (string, error) {
	return c.run(timeout, "docker", args...)
}

func (c *composeCluster) run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// container is the id of service's container.
func (c *composeCluster) container(service string) string {
	c.t.Helper()
	out, err := c.compose(30*time.Second, "ps", "-q", service)
	require.NoError(c.t, err)
	id := strings.TrimSpace(out)
	require.NotEmpty(c.t, id, "no container for %s", service)
	return id
}

// network is the project's network, named as docker-compose v1 names it.
func (c *composeCluster) network() string { return c.project + "_corral" }

// client talks to the given controllers through their published ports.
func (c *composeCluster) client(ids ...int) *client.Client {
	c.t.Helper()
	var eps []string
	for _, id := range ids {
		eps = append(eps, "https://"+c.apiAddr[id])
	}
	cl, err := client.New(client.Config{Endpoints: eps, Token: c.token, CACert: c.caPEM, Timeout: 5 * time.Second})
	require.NoError(c.t, err)
	return cl
}

// execCorral runs the corral command line inside service's container
// against its own API on loopback: the way to reach a controller cut off
// from the network, whose published port goes through that network.
func (c *composeCluster) execCorral(service string, args ...string) (string, error) {
	cmd := []string{"exec", "-e", "CORRAL_TOKEN", "-e", "CORRAL_CACERT=/tls/ca.pem",
		"-e", "CORRAL_ENDPOINTS=https://127.0.0.1:8080", c.container(service), "/corral"}
	return c.docker(30*time.Second, append(cmd, args...)...)
}

// poll calls f until it returns nil or timeout passes, then fails the
// test with f's last error.
func poll(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond) // polling interval, not a wait for a condition
	}
}

// leaderOf asks every given controller for the leader and returns it when
// they all name the same one.
func (c *composeCluster) leaderOf(ctx context.Context, ids ...int) (uint64, error) {
	var leader uint64
	for _, id := range ids {
		cl, ok := c.single[id]
		if !ok { // one client per controller, so that polls reuse connections
			cl = c.client(id)
			c.single[id] = cl
		}
		st, err := cl.Cluster(ctx)
		if err != nil {
			return 0, fmt.Errorf("controller %d: %w", id, err)
		}
		if st.LeaderID == 0 {
			return 0, fmt.Errorf("controller %d knows no leader", id)
		}
		if leader != 0 && st.LeaderID != leader {
			return 0, fmt.Errorf("controllers disagree on the leader: %d and %d", leader, st.LeaderID)
		}
		leader = st.LeaderID
	}
	return leader, nil
}
