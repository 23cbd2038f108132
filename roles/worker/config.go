package worker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// DefaultHeartbeatInterval is how often a worker heartbeats.
const DefaultHeartbeatInterval = time.Second

// SelfFenceFraction is the part of the session timeout after which a worker
// whose heartbeats are not acknowledged considers itself fenced. It is
// measured from the send time of the last acknowledged heartbeat, which is
// never later than the moment the leader received it, so the worker stops
// at least (1-SelfFenceFraction) x timeout before the leader can fence it,
// whatever the network delay.
const SelfFenceFraction = 0.6

// IDFile is the file in a worker's data dir that keeps its id.
const IDFile = "worker-id"

// Config configures a worker: a node that runs work, keeps no raft
// state and never votes.
type Config struct {
	// ID is the worker's id. Empty means the one kept in DataDir, or a new
	// one generated and kept there on first start.
	ID string
	// DataDir keeps the worker's id.
	DataDir string
	// Controllers are the controllers' cluster (QUIC) addresses; any one
	// will do, the others are tried when it does not answer.
	Controllers []string
	// TLSDir holds ca.pem, node.pem and node-key.pem (the cluster CA).
	TLSDir string
	// JoinToken, instead of TLSDir, bootstraps the worker's certificate:
	// on first start the worker makes a key and trades the token for a
	// certificate with a controller started with --ca-dir (join.go), and
	// keeps the files in DataDir/tls; later starts use them and ignore the
	// token. CACert is the cluster's ca.pem, which the controllers'
	// certificates must chain to. JoinContext, when set, ends the join
	// early (the process is stopping).
	JoinToken   string
	CACert      string
	JoinContext context.Context
	// Labels are free-form key=value attributes for scheduling.
	Labels map[string]string
	// CPUMillis and MemoryMB are the capacity offered; 0 means the
	// machine's (all CPUs, all memory).
	CPUMillis int64
	MemoryMB  int64
	// MaxAllocs is the most allocations (not yet ended) the scheduler
	// places here; 0 means DefaultMaxAllocs. It reaches the controllers as
	// the metadata.MaxAllocsLabel label of the registration.
	MaxAllocs int
	// Addresses are where the worker can be reached; default HTTPAddr.
	Addresses []string
	// HTTPAddr serves /healthz, /readyz and /metrics; "" disables it.
	HTTPAddr string
	// HeartbeatInterval is the time between heartbeats (default 1s).
	HeartbeatInterval time.Duration
	// DialTimeout bounds one connection attempt (default 2s).
	DialTimeout time.Duration
	// Version is reported at registration.
	Version string
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Dialer, when set, replaces QUIC (in-process tests use
	// MemNetwork.StreamDialer). It is not closed by the worker.
	Dialer transport.StreamDialer
	// Registry receives the worker's metrics; nil means a new one (served
	// on HTTPAddr). A combined node passes its controller's registry.
	Registry *prometheus.Registry
	// Load reports current usage for heartbeats; nil reads /proc.
	Load func() transport.WorkerLoad
	// OnFenced is called when the worker stops being alive at epoch (self
	// fence, or a leader refused the epoch): running work must stop. It
	// runs on the worker's loop and must return quickly.
	OnFenced func(epoch uint64)
	// OnAlive is called when the worker registered and holds epoch.
	OnAlive func(epoch uint64)
	// EnforceLimits asks the worker to set up cgroup v2 limits for tasks
	// where the machine allows it (cgroup.go). It moves the worker process
	// into a cgroup of its own, so in-process tests leave it off.
	EnforceLimits bool
	// Simulate acknowledges allocations without running processes
	// (benchmarks of the control plane).
	Simulate bool
	// SupervisorCmd runs one task's supervisor; default: this binary's
	// hidden "supervise" command.
	SupervisorCmd []string
	// LogRetention keeps the logs of ended allocations this long (0:
	// forever).
	LogRetention time.Duration
	// TaskUser is, when the worker runs as root, the user its tasks run as
	// unless their job names another (default DefaultTaskUser);
	// AllowedTaskUsers are the other users a job may name (task.user). A
	// worker that is not root runs tasks as itself.
	TaskUser         string
	AllowedTaskUsers []string
	// AllowedCommands are globs (path.Match) a task's command path must
	// match; empty allows every command.
	AllowedCommands []string
	// OnHeartbeatAck is called with the round trip of every acknowledged
	// heartbeat (benchmarks); it runs on the worker's loop.
	OnHeartbeatAck func(rtt time.Duration)
	// OnLeaderAck is called at the first heartbeat acknowledged by another
	// leader than the previous acknowledgement (or the registration) came
	// from: another address, or the same address at a higher controller
	// epoch (a restarted controller that won the election). It marks the
	// moment the session resumed on a new leader after a failover, with
	// that leader's address and controller epoch (raft term) and the time
	// the acknowledgement was handled. It is not called at registration
	// (see OnAlive), so a worker that had to register again after a
	// failover does not count as resumed. It runs on the worker's loop,
	// at most once per leader change, and must return quickly.
	OnLeaderAck func(addr string, controllerEpoch uint64, at time.Time)
}

// DefaultTaskUser is the user a root worker runs tasks as by default.
const DefaultTaskUser = "nobody"

func (c *Config) defaults() {
	if c.TaskUser == "" {
		c.TaskUser = DefaultTaskUser
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.CPUMillis == 0 {
		c.CPUMillis = int64(runtime.NumCPU()) * 1000
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = machineMemoryMB()
	}
	if len(c.Addresses) == 0 && c.HTTPAddr != "" {
		c.Addresses = []string{c.HTTPAddr}
	}
	if c.Version == "" {
		c.Version = transport.Build().Version
	}
	// Resources are used for placement only: no cgroup limits are set on
	// tasks yet, and the worker says so where operators look (worker list).
	labels := make(map[string]string, len(c.Labels)+1)
	for k, v := range c.Labels {
		labels[k] = v
	}
	labels[LimitsLabel] = "not-enforced"
	if c.MaxAllocs <= 0 {
		c.MaxAllocs = DefaultMaxAllocs
	}
	labels[metadata.MaxAllocsLabel] = strconv.Itoa(c.MaxAllocs)
	c.Labels = labels
}

// DefaultMaxAllocs is the default of Config.MaxAllocs (--max-allocs).
const DefaultMaxAllocs = metadata.DefaultMaxAllocs

// LimitsLabel is the label a worker sets to say whether task resource
// limits are enforced on it.
const LimitsLabel = "corral.limits"

func (c *Config) validate() error {
	switch {
	case c.DataDir == "":
		return errors.New("--data-dir is required (the worker keeps its id there)")
	case len(c.Controllers) == 0:
		return errors.New("--controllers is required: the controllers' cluster addresses, e.g. 127.0.0.1:7001,127.0.0.1:7002")
	case c.JoinToken != "" && c.TLSDir != "":
		return fmt.Errorf("give --tls-dir or --join-token, not both: a worker that joins with a token keeps its certificate in %s",
			filepath.Join(c.DataDir, JoinTLSDir))
	case c.JoinToken != "" && c.CACert == "":
		return errors.New("--join-token needs --ca-cert: the cluster's ca.pem, to check the controllers with")
	case c.JoinToken == "" && c.CACert != "":
		return errors.New("--ca-cert goes with --join-token (with --tls-dir, the CA is the TLS dir's ca.pem)")
	case c.JoinToken != "" && c.Dialer != nil:
		return errors.New("--join-token needs the QUIC transport (this worker has an injected dialer)")
	case c.Dialer == nil && c.TLSDir == "" && c.JoinToken == "":
		return errors.New("--tls-dir is required (this worker's certificate from the controllers' CA; see 'corral certs issue'), or join with --join-token and --ca-cert")
	case c.CPUMillis < 0 || c.MemoryMB < 0:
		return errors.New("--cpu and --memory must not be negative")
	}
	return nil
}

// idFromCertificate is the worker id the certificate binds this worker to:
// a worker certificate names exactly one worker, and the controllers refuse
// this worker under any other id. A controller certificate (combined mode,
// `corral bench`) binds none, so want stands.
func idFromCertificate(self transport.Identity, want string) (string, error) {
	if self.Role != transport.RoleWorker {
		return want, nil
	}
	if want != "" && want != self.ID {
		return "", fmt.Errorf("the TLS certificate is for worker %s, not %s: start with --node-id=%s or issue a certificate for %s with 'corral certs issue --role worker --id %s'",
			self.ID, want, self.ID, want, want)
	}
	return self.ID, nil
}

// resolveWorkerID returns the id kept in dataDir, checking it against want
// (if given), or records want (or a new id) there.
func resolveWorkerID(dataDir, want string) (string, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	path := filepath.Join(dataDir, IDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		have := strings.TrimSpace(string(b))
		if err := metadata.ValidateWorkerID(have); err != nil {
			return "", fmt.Errorf("data dir %s: corrupt %s: %w", dataDir, IDFile, err)
		}
		if want != "" && want != have {
			return "", fmt.Errorf("data dir %s belongs to worker %s, not %s: start with --node-id=%s or use an empty data dir",
				dataDir, have, want, have)
		}
		return have, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read worker id: %w", err)
	}
	id := want
	if id == "" {
		var r [6]byte
		_, _ = rand.Read(r[:])
		id = "w-" + hex.EncodeToString(r[:])
	}
	if err := metadata.ValidateWorkerID(id); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("record worker id: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("record worker id: %w", err)
	}
	return id, nil
}

func newIncarnation() string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// machineMemoryMB reads MemTotal from /proc/meminfo (0 when unknown).
func machineMemoryMB() int64 {
	kb, _ := meminfo("MemTotal")
	return int64(kb / 1024)
}

// meminfo returns one /proc/meminfo field in kB.
func meminfo(field string) (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return v, err == nil
	}
	return 0, false
}

// ParseLabels parses "k=v,k2=v2".
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want KEY=VALUE", part)
		}
		if err := metadata.ValidateLabelKey(k); err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("label %q is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}
