package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/roles/controller/api"
	"github.com/corral-dev/corral/roles/controller/coord"
	"github.com/corral-dev/corral/transport"
)

// DefaultElectionTicks is the election timeout in ticks when none is set.
const DefaultElectionTicks = 7

// Config configures one controller: a voter in the metadata quorum
// that also serves the HTTP API.
type Config struct {
	// NodeID is this controller's raft id. It must be non-zero and is never
	// reused for another node, even after this one is removed.
	NodeID uint64
	// DataDir holds the raft log, snapshots and the node's identity.
	DataDir string
	// ClusterAddr is the QUIC address other controllers reach this one on.
	ClusterAddr string
	// HTTPAddr is the API address; empty disables the HTTP server.
	HTTPAddr string
	// HTTPAdvertiseAddr (--http-advertise-addr), when set, is the API
	// address announced to the cluster instead of HTTPAddr: `controller
	// list` and the dashboard hand it to clients and browsers, so it must
	// be one they can reach, which a listen address like 0.0.0.0:8080 is
	// not. Its host is also allowed as a Host name (browser.go).
	HTTPAdvertiseAddr string
	// Peers maps every initial voter's id (this node included) to its
	// cluster address. It is used only to bootstrap an empty data dir and
	// to find peers; the membership itself lives in the log.
	Peers map[uint64]string
	// Join lists HTTP API addresses of running controllers. A controller
	// with an empty data dir and Join set joins that cluster (it must have
	// been added with `corral controller add` first) instead of
	// bootstrapping from Peers.
	Join []string
	// Token is the API token used to call Join endpoints.
	Token string
	// ClusterID, when set, must match the id kept in the data dir. On a
	// brand-new cluster it becomes the cluster id; otherwise the first
	// leader generates one and replicates it.
	ClusterID string
	// TLSDir holds ca.pem, node.pem and node-key.pem for QUIC mutual TLS.
	TLSDir string
	// CADir, when set, holds the cluster CA (ca.pem and ca-key.pem): the
	// controller then signs the certificates of workers that join with a
	// token (join.go). Without it, join requests are refused with an error
	// naming --ca-dir.
	CADir string
	// APITokenFile, when set, holds the bearer token every API call needs.
	APITokenFile string
	// HTTPInsecure allows a non-loopback HTTP address without TLS or a
	// token.
	HTTPInsecure bool
	// HTTPTLSCert and HTTPTLSKey, when set (both), serve the API and the
	// metrics listener over HTTPS with this pair, reloaded when the files
	// change. The node certificate (TLSDir's node.pem, node-key.pem) will do.
	HTTPTLSCert, HTTPTLSKey string
	// HTTPAllowedHosts are the Host names and IPs the API answers to
	// (--http-allowed-hosts; "*": any). Empty: api.DefaultAllowedHosts of
	// HTTPAddr and the names in HTTPTLSCert.
	HTTPAllowedHosts []string
	// MetricsAddr, when set, serves GET /metrics (and /healthz, /readyz)
	// on a listener of its own instead of the API port.
	MetricsAddr string
	// MetricsTokenFile, when set, holds the bearer token GET /metrics
	// needs (the API token is accepted too).
	MetricsTokenFile string
	// EnablePprof serves Go's runtime profiles under /debug/pprof/ on the
	// API (behind the API token), as etcd's --enable-pprof does.
	EnablePprof bool
	// SnapshotEvery is how many applied entries trigger a state-machine
	// snapshot and log compaction.
	SnapshotEvery uint64
	// QuotaBytes is the storage quota (--quota-bytes): past it, writes that
	// add data are refused with no_space before they are proposed
	// (api/quota.go). 0 means api.DefaultQuotaBytes; negative, no quota.
	QuotaBytes int64
	// MaxLeases caps the live leases (--max-leases) before proposing a
	// grant; 0 means api.DefaultMaxLeases.
	MaxLeases int
	// SnapshotCatchUp is how many entries are kept behind a snapshot so a
	// briefly lagging follower catches up from the log, not a snapshot.
	SnapshotCatchUp uint64
	// TickInterval is the raft tick; ElectionTicks (default
	// DefaultElectionTicks) and HeartbeatTicks (default 1) are counted in
	// ticks.
	TickInterval   time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// RequestTimeout bounds how long a write or linearizable read waits.
	RequestTimeout time.Duration
	// HTTPMaxConns bounds the API's open connections (default
	// api.DefaultMaxConns); HTTPIdleTimeout closes idle keep-alive
	// connections (default api.DefaultIdleTimeout); HTTPReadTimeout
	// bounds reading a request's body (default api.DefaultReadTimeout).
	HTTPMaxConns    int
	HTTPIdleTimeout time.Duration
	HTTPReadTimeout time.Duration
	// MaxWatches bounds the watches open on this controller (default
	// coord.DefaultMaxWatchers).
	MaxWatches int
	// MaxLeasesPerToken and MaxWatchesPerToken bound one API token's live
	// leases and open watches (defaults api.DefaultMaxLeasesPerToken and
	// api.DefaultMaxWatchesPerToken).
	MaxLeasesPerToken  int
	MaxWatchesPerToken int
	// ZK configures the ZooKeeper port (zkport.go); off unless ZK.Addr.
	ZK ZKConfig
	// PromoteAfter overrides how long a learner must stay caught up before
	// it is promoted (default PromoteAfter); tests shorten it.
	PromoteAfter time.Duration
	// NoSync disables fsync; for throwaway test clusters only.
	NoSync bool
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Transport, when set, replaces QUIC (in-process tests use the
	// in-memory network).
	Transport transport.Transport
	// SessionTimeout is how long the leader waits without a heartbeat
	// before it fences a worker (default DefaultSessionTimeout).
	SessionTimeout time.Duration
	// WorkerListener, when set, is where workers connect (in-process tests
	// use MemNetwork.ListenStreams); nil serves ALPNWorker on the QUIC
	// cluster listener, or no workers with an injected Transport.
	WorkerListener transport.StreamListener
	// PeerHTTPListener and PeerHTTPDialer, when set, carry API requests
	// between controllers (in-process tests use the in-memory network);
	// nil serves and dials ALPNPeerHTTP on the QUIC cluster link.
	PeerHTTPListener transport.StreamListener
	PeerHTTPDialer   transport.StreamDialer

	// ApplyHook, when set, runs on the apply loop before every batch of
	// committed entries is applied. It exists for tests, which block it to
	// stand for a slow apply path; production leaves it nil.
	ApplyHook func()
	// PersistHook, when set, runs on the append loop before a batch of new
	// entries is written, with the last one's index. Tests block it;
	// production leaves it nil.
	PersistHook func(lastEntry uint64)
	// SnapshotHook, when set, runs where a snapshot is written, off the
	// apply loop, before the encoding. Tests block it to show that the loop
	// goes on meanwhile; production leaves it nil.
	SnapshotHook func()
}

// Defaults fills unset fields with their documented defaults.
func (c *Config) Defaults() {
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 10000
	}
	if c.SnapshotCatchUp == 0 {
		c.SnapshotCatchUp = 5000
	}
	if c.QuotaBytes == 0 {
		c.QuotaBytes = api.DefaultQuotaBytes
	}
	if c.MaxLeases == 0 {
		c.MaxLeases = api.DefaultMaxLeases
	}
	if c.SnapshotCatchUp > c.SnapshotEvery {
		c.SnapshotCatchUp = c.SnapshotEvery
	}
	if c.TickInterval == 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.ElectionTicks == 0 {
		// 0.7 s at the default tick, randomized by raft up to 1.4 s: a
		// leader's death costs writers about a second (docs/PERFORMANCE.md,
		// "Failover"), while seven missed heartbeats in a row on a healthy
		// loaded cluster did not happen in 60 s of 128 writers.
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.MaxWatches == 0 {
		c.MaxWatches = coord.DefaultMaxWatchers
	}
	if c.MaxLeasesPerToken == 0 {
		c.MaxLeasesPerToken = api.DefaultMaxLeasesPerToken
	}
	if c.MaxWatchesPerToken == 0 {
		c.MaxWatchesPerToken = api.DefaultMaxWatchesPerToken
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports the first configuration problem in words a user can act on.
func (c *Config) Validate() error {
	switch {
	case c.NodeID == 0:
		return errors.New("--node-id must be a positive integer")
	case c.DataDir == "":
		return errors.New("--data-dir is required")
	case len(c.Peers) == 0 && len(c.Join) == 0:
		return errors.New("--controllers (to bootstrap or restart) or --join (to join a running cluster) is required, e.g. --controllers=1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003")
	case len(c.Join) > 0 && c.ClusterAddr == "" && c.Peers[c.NodeID] == "":
		return errors.New("--cluster-addr is required with --join")
	case c.Transport == nil && c.TLSDir == "":
		return errors.New("--tls-dir is required (issue one with: corral certs issue --ca-dir CA --role controller --id N --out DIR)")
	case c.ElectionTicks <= c.HeartbeatTicks:
		return errors.New("election ticks must be greater than heartbeat ticks")
	}
	if err := c.checkFailoverFits(); err != nil {
		return err
	}
	if err := c.checkMetrics(); err != nil {
		return err
	}
	if err := c.checkHTTPAdvertise(); err != nil {
		return err
	}
	if (c.HTTPTLSCert == "") != (c.HTTPTLSKey == "") {
		return errors.New("--http-tls-cert and --http-tls-key go together: give both (e.g. the node's node.pem and node-key.pem) or neither")
	}
	if _, ok := c.Peers[c.NodeID]; !ok && len(c.Join) == 0 {
		return fmt.Errorf("--controllers does not list this node's id %d", c.NodeID)
	}
	if c.ClusterAddr == "" {
		c.ClusterAddr = c.Peers[c.NodeID]
	}
	if c.Peers == nil {
		c.Peers = map[uint64]string{}
	}
	if c.Peers[c.NodeID] == "" {
		c.Peers[c.NodeID] = c.ClusterAddr
	}
	if err := c.checkLivenessPort(); err != nil {
		return err
	}
	return c.ZK.validate()
}

// checkLivenessPort refuses a TCP listener on the cluster port's number:
// the controllers' liveness link (transport/liveness.go) listens there
// on TCP, beside QUIC on UDP, and whichever started second would fail.
func (c *Config) checkLivenessPort() error {
	if c.Transport != nil {
		return nil // in memory: no sockets
	}
	ch, cp, err := net.SplitHostPort(c.ClusterAddr)
	if err != nil || cp == "0" {
		return nil
	}
	for _, l := range []struct{ flag, addr string }{{"--http-addr", c.HTTPAddr}, {"--metrics-addr", c.MetricsAddr}, {"--zk-addr", c.ZK.Addr}} {
		h, p, err := net.SplitHostPort(l.addr)
		if err != nil || p != cp || !sameHost(h, ch) {
			continue
		}
		return fmt.Errorf("%s %s uses TCP port %s, which --cluster-addr %s takes on TCP too (the controllers' liveness link, beside QUIC on UDP): give %s another port",
			l.flag, l.addr, p, c.ClusterAddr, l.flag)
	}
	return nil
}

// sameHost reports whether two listen hosts may be the same address: the
// same name, or either one every address.
func sameHost(a, b string) bool {
	every := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return a == b || every(a) || every(b)
}

// ParsePeers parses "1@host:port,2@host:port" into id -> address.
func ParsePeers(s string) (map[uint64]string, error) {
	peers := map[uint64]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idStr, addr, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("controller %q: want ID@HOST:PORT", part)
		}
		id, err := strconv.ParseUint(idStr, 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("controller %q: id must be a positive integer", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("controller %q: bad address: %v", part, err)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("controller id %d is listed twice", id)
		}
		peers[id] = addr
	}
	if len(peers) == 0 {
		return nil, errors.New("no controllers given; want ID@HOST:PORT,...")
	}
	return peers, nil
}

// sortedIDs returns the ids of a member set in order.
func sortedIDs[V any](m map[uint64]V) []uint64 {
	return slices.Sorted(maps.Keys(m))
}

// checkFailoverFits refuses a session timeout T that a leader failover
// would not fit in: a worker fences itself after 0.6 T without an answer,
// and before then it must notice the silent leader (0.75 of a heartbeat
// interval, at most T/10), wait out an election (up to twice the election
// timeout E, raft's randomization), learn the winner (a quarter interval)
// and resume (a round trip; 100 ms allowed). That is 0.6 T >= 2E + T/10 +
// 100 ms, or T >= 4E + 200 ms. The defaults (E = 1 s, T = 10 s) also leave
// room for a second election after a split vote (docs/ARCHITECTURE.md,
// "What a failover costs a worker").
func (c *Config) checkFailoverFits() error {
	election := time.Duration(c.ElectionTicks) * c.TickInterval
	if minimum := 4*election + 200*time.Millisecond; c.SessionTimeout < minimum {
		return fmt.Errorf("--session-timeout %v is too short for an election timeout of %v (%d ticks of --tick-interval %v): "+
			"workers would fence themselves while a new leader is elected. Use --session-timeout %v or more "+
			"(%v, ten election timeouts, also leaves room for a split vote), or a shorter --tick-interval",
			c.SessionTimeout, election, c.ElectionTicks, c.TickInterval, minimum, 10*election)
	}
	return nil
}

// checkMetrics checks --metrics-addr and reads --metrics-token-file now,
// so a bad one stops the controller before it opens anything.
func (c *Config) checkMetrics() error {
	if c.MetricsAddr != "" {
		if c.HTTPAddr == "" {
			return errors.New("--metrics-addr needs --http-addr: metrics move off the API port, which is not served")
		}
		_, port, err := net.SplitHostPort(c.MetricsAddr)
		if err != nil {
			return fmt.Errorf("bad --metrics-addr %q: want HOST:PORT, e.g. 127.0.0.1:9090: %v", c.MetricsAddr, err)
		}
		if c.MetricsAddr == c.HTTPAddr && port != "0" {
			return fmt.Errorf("--metrics-addr %s is also --http-addr: give the metrics listener a port of its own", c.MetricsAddr)
		}
	}
	if c.MetricsTokenFile != "" {
		if _, err := api.ReadTokenFile(c.MetricsTokenFile, "metrics token"); err != nil {
			return fmt.Errorf("--metrics-token-file: %w", err)
		}
	}
	return nil
}

// checkHTTPAdvertise refuses an --http-advertise-addr other machines could
// not use: it is handed as is to clients and browsers.
func (c *Config) checkHTTPAdvertise() error {
	if c.HTTPAdvertiseAddr == "" {
		return nil
	}
	if c.HTTPAddr == "" {
		return errors.New("--http-advertise-addr needs --http-addr: there is no API to advertise")
	}
	host, port, err := net.SplitHostPort(c.HTTPAdvertiseAddr)
	if err != nil {
		return fmt.Errorf("bad --http-advertise-addr %q: want HOST:PORT other machines reach this API on, e.g. ctrl1.example.com:8080: %v",
			c.HTTPAdvertiseAddr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("bad --http-advertise-addr %q: the port must be a number from 1 to 65535, e.g. ctrl1.example.com:8080", c.HTTPAdvertiseAddr)
	}
	if unspecifiedHost(host) {
		return fmt.Errorf("bad --http-advertise-addr %q: %q is no address to reach; give this machine's name or IP, e.g. ctrl1.example.com:%s",
			c.HTTPAdvertiseAddr, host, port)
	}
	return nil
}

// unspecifiedHost reports whether host means "every interface" (empty,
// 0.0.0.0, ::): fine to listen on, useless to connect to.
func unspecifiedHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// announcedHTTPAddr is the API address this controller records in the
// member list: HTTPAdvertiseAddr when set, else listen (the bound
// address). unreachable says that listen's host is unspecified, so
// nobody else can use the announced address (the caller warns).
func (c *Config) announcedHTTPAddr(listen string) (addr string, unreachable bool) {
	if c.HTTPAdvertiseAddr != "" {
		return c.HTTPAdvertiseAddr, false
	}
	host, _, err := net.SplitHostPort(listen)
	return listen, err == nil && unspecifiedHost(host)
}
