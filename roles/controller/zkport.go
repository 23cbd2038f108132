package controller

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/corral-dev/corral/roles/controller/zk"
	"github.com/corral-dev/corral/transport"
)

// ZKConfig is the ZooKeeper port's part of Config (--zk-* flags).
type ZKConfig struct {
	// Addr is where the ZooKeeper client protocol is served; "" (the
	// default) serves none.
	Addr string
	// MinSessionTimeout and MaxSessionTimeout bound negotiated session
	// timeouts (defaults 4s and 40s, ZooKeeper's).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// FourLetterWords is the four-letter-word allow-list; nil is the
	// server's default.
	FourLetterWords []string
	// MaxConns bounds client connections (0: the server's default).
	MaxConns int
	// TLSCert and TLSKey make the port speak TLS (ZooKeeper's
	// secureClientPort).
	TLSCert, TLSKey string
	// Insecure allows plain TCP on a non-loopback address, where digest
	// passwords and data would cross the network in clear.
	Insecure bool
	// ContainerCheckInterval overrides how often the leader deletes
	// empty containers and expired TTL nodes (tests shorten it).
	ContainerCheckInterval time.Duration
}

// validate refuses a plain-text port that other machines can reach,
// unless asked for.
func (z ZKConfig) validate() error {
	if z.Addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(z.Addr)
	if err != nil {
		return fmt.Errorf("bad --zk-addr %q: want HOST:PORT, e.g. --zk-addr 127.0.0.1:2181", z.Addr)
	}
	if (z.TLSCert == "") != (z.TLSKey == "") {
		return errors.New("--zk-tls-cert and --zk-tls-key go together: give both or neither")
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if z.TLSCert == "" && !loopback && !z.Insecure {
		return fmt.Errorf("refusing to serve ZooKeeper on %s in plain TCP, where digest passwords and znode data would cross the network in clear; "+
			"set --zk-tls-cert and --zk-tls-key (clients connect as to ZooKeeper's secureClientPort), use a loopback address, or pass --zk-insecure", z.Addr)
	}
	if z.MinSessionTimeout < 0 || z.MaxSessionTimeout < 0 || (z.MaxSessionTimeout > 0 && z.MinSessionTimeout > z.MaxSessionTimeout) {
		return fmt.Errorf("--zk-min-session-timeout %v must not exceed --zk-max-session-timeout %v", z.MinSessionTimeout, z.MaxSessionTimeout)
	}
	if z.MinSessionTimeout > 0 && z.MinSessionTimeout < time.Second {
		return fmt.Errorf("--zk-min-session-timeout %v is below a second, the shortest lease; use 1s or more (ZooKeeper's default is 4s)", z.MinSessionTimeout)
	}
	return nil
}

// newZK builds the ZooKeeper server (before the raft loop starts, so the
// apply hooks can reach it); startZK listens once the controller runs.
func (c *Controller) newZK() error {
	z := c.cfg.ZK
	if z.Addr == "" {
		return nil
	}
	var tlsConf *tls.Config
	if z.TLSCert != "" {
		kp, err := transport.NewKeyPairReloader(z.TLSCert, z.TLSKey, c.log)
		if err != nil {
			return fmt.Errorf("load --zk-tls-cert/--zk-tls-key: %w", err)
		}
		tlsConf = kp.ServerTLS()
	}
	srv, err := zk.New(zk.Config{
		Addr: z.Addr, MinSessionTimeout: z.MinSessionTimeout, MaxSessionTimeout: z.MaxSessionTimeout,
		MaxConns: z.MaxConns, FourLetterWords: z.FourLetterWords, TLS: tlsConf,
		ContainerCheckInterval: z.ContainerCheckInterval, ProposeTimeout: c.cfg.RequestTimeout,
		ServerID: fmt.Sprint(c.cfg.NodeID), Version: transport.Version,
		Logger: c.log, Registerer: c.reg,
	}, zkBackend{c})
	if err != nil {
		return fmt.Errorf("zookeeper port: %w", err)
	}
	c.zk = srv
	return nil
}

// startZK serves the ZooKeeper port.
func (c *Controller) startZK() error {
	if c.zk == nil {
		return nil
	}
	ln, err := net.Listen("tcp", c.cfg.ZK.Addr)
	if err != nil {
		return fmt.Errorf("listen on --zk-addr %s: %w (is another ZooKeeper or corral using it?)", c.cfg.ZK.Addr, err)
	}
	c.zkAddr = ln.Addr().String()
	go func() {
		if err := c.zk.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			c.log.Error("zookeeper port stopped", "err", err)
		}
	}()
	c.log.Info("serving the ZooKeeper protocol", "zk_addr", ln.Addr().String(), "tls", c.cfg.ZK.TLSCert != "")
	return nil
}

// ZKAddr returns the ZooKeeper port's address, "" when it is off.
func (c *Controller) ZKAddr() string {
	return c.zkAddr
}
