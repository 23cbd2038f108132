package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
)

// zkFlags are the ZooKeeper port's flags, shared by `corral run` (off by
// default) and `corral dev` (on 127.0.0.1:2181): defaultAddr is
// --zk-addr's default.
func zkFlags(defaultAddr string) []cli.Flag {
	addrUsage := "HOST:PORT to serve the ZooKeeper client protocol on, so ZooKeeper clients (Curator, kazoo, zkCli, " +
		"Kafka-style apps) can point their connect string at corral; off when empty"
	return []cli.Flag{
		&cli.StringFlag{Name: "zk-addr", Value: defaultAddr, EnvVars: envVars("zk-addr"), Usage: addrUsage},
		&cli.StringFlag{Name: "zk-tls-cert", EnvVars: envVars("zk-tls-cert"),
			Usage: "PEM certificate that makes the ZooKeeper port speak TLS (like ZooKeeper's secureClientPort); with --zk-tls-key"},
		&cli.StringFlag{Name: "zk-tls-key", EnvVars: envVars("zk-tls-key"), Usage: "PEM key of --zk-tls-cert"},
		&cli.BoolFlag{Name: "zk-insecure", EnvVars: envVars("zk-insecure"),
			Usage: "allow the ZooKeeper port in plain TCP on a non-loopback address (digest passwords and data cross the network in clear)"},
		&cli.DurationFlag{Name: "zk-min-session-timeout", Value: 4e9, EnvVars: envVars("zk-min-session-timeout"),
			Usage: "shortest ZooKeeper session timeout a client may negotiate (ZooKeeper's minSessionTimeout)"},
		&cli.DurationFlag{Name: "zk-max-session-timeout", Value: 40e9, EnvVars: envVars("zk-max-session-timeout"),
			Usage: "longest ZooKeeper session timeout a client may negotiate (ZooKeeper's maxSessionTimeout)"},
		&cli.StringFlag{Name: "zk-4lw-whitelist", EnvVars: envVars("zk-4lw-whitelist"),
			Usage: "comma-separated four-letter words the ZooKeeper port answers (ZooKeeper's 4lw.commands.whitelist), * for all; " +
				"default ruok,srvr,isro,mntr"},
		&cli.IntFlag{Name: "zk-max-conns", Value: 60000, EnvVars: envVars("zk-max-conns"),
			Usage: "most ZooKeeper client connections this controller holds; more are closed at once"},
	}
}

// zkConfig reads zkFlags; the controller validates the combination.
func zkConfig(c *cli.Context) roles.ZKConfig {
	return roles.ZKConfig{
		Addr:    c.String("zk-addr"),
		TLSCert: c.String("zk-tls-cert"), TLSKey: c.String("zk-tls-key"), Insecure: c.Bool("zk-insecure"),
		MinSessionTimeout: c.Duration("zk-min-session-timeout"), MaxSessionTimeout: c.Duration("zk-max-session-timeout"),
		FourLetterWords: splitList(c.String("zk-4lw-whitelist")),
		MaxConns:        c.Int("zk-max-conns"),
	}
}
