package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A ZooKeeper port in plain TCP that other machines can reach is refused
// unless asked for, and the refusal says what would work.
func TestZKConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		z    ZKConfig
		want string // "" = valid
	}{
		{"off", ZKConfig{}, ""},
		{"loopback", ZKConfig{Addr: "127.0.0.1:2181"}, ""},
		{"localhost", ZKConfig{Addr: "localhost:2181"}, ""},
		{"ipv6 loopback", ZKConfig{Addr: "[::1]:2181"}, ""},
		{"wildcard plain", ZKConfig{Addr: ":2181"}, "--zk-tls-cert and --zk-tls-key"},
		{"public plain", ZKConfig{Addr: "10.0.0.1:2181"}, "or pass --zk-insecure"},
		{"public insecure", ZKConfig{Addr: "10.0.0.1:2181", Insecure: true}, ""},
		{"public tls", ZKConfig{Addr: "10.0.0.1:2181", TLSCert: "c.pem", TLSKey: "k.pem"}, ""},
		{"cert without key", ZKConfig{Addr: "127.0.0.1:2181", TLSCert: "c.pem"}, "go together"},
		{"no port", ZKConfig{Addr: "127.0.0.1"}, "want HOST:PORT"},
		{"min above max", ZKConfig{Addr: "127.0.0.1:2181", MinSessionTimeout: 10 * time.Second, MaxSessionTimeout: 5 * time.Second}, "must not exceed"},
		{"min below a lease", ZKConfig{Addr: "127.0.0.1:2181", MinSessionTimeout: 500 * time.Millisecond}, "below a second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.z.validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
