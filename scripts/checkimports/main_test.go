package main

import (
	"strings"
	"testing"
)

func TestCheckImport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pkg, imp  string
		fromTests bool
		want      string // a substring of the violation, "" for none
	}{
		{"roles/controller", module + "/roles/worker", false, "never import each other"},
		{"roles/controller/sessions", module + "/roles/worker/executor", true, "never import each other"},
		{"roles/worker", module + "/roles/controller", false, "stores nothing"},
		{"roles/worker", "go.etcd.io/raft/v3", false, "stores nothing"},
		{"roles/controller/api", "go.etcd.io/raft/v3/raftpb", false, "HTTP API"},
		{"roles/scheduler", "math/rand/v2", false, "scheduler is pure"},
		{"roles/scheduler", "math/rand/v2", true, ""},
		{"metadata", module + "/transport", false, "lower layer"},
		{"metadata", "go.yaml.in/yaml/v3", false, "metadata/jobspec"},
		{"metadata/jobspec", "go.yaml.in/yaml/v3", false, ""},
		{"cli", module + "/roles/controller", false, "through roles/"},
		{"client", module + "/metadata", false, "depends on nothing of ours"},
		{"transport", module + "/roles", false, "lower layer"},
		{"roles", module + "/roles/worker", false, ""},
		{"roles/controller", module + "/raftlog", false, ""},
		{"roles/controller", "net/http", false, ""},
		{"roles/controller/zk/jute", module + "/roles/controller/fault", false, "ZooKeeper wire encoding only"},
		{"roles/controller/zk/jute", "github.com/go-zookeeper/zk", true, ""},
		{"roles/controller/zk", module + "/roles/controller/replica", false, "works through the Backend it declares"},
		{"roles/controller/zk", module + "/roles/controller/zk/watch", true, ""},
		{"roles/controller/zk/watch", "time", false, "the watch registry is pure"},
		{"roles/controller/zk/jute", module + "/roles/controller/zk/zktest", true, ""},
		{"cli", module + "/roles/controller/zk/zktest", true, ""},
		{"integration", module + "/roles/controller/zk/zktest", true, ""},
		{"roles/controller/zk", module + "/roles/controller/zk/zktest", false, "only _test.go files"},
		{"cli", module + "/roles/controller/zk/zktest", false, "only _test.go files"},
		{"metadata", module + "/roles/controller/zk/zktest", true, "lower layer"},
		{"roles/controller/zk/zktest", "os/exec", false, ""},
		{"roles/controller/zk/zktest", "github.com/stretchr/testify/require", false, ""},
		{"roles/controller/zk/zktest", "github.com/go-zookeeper/zk", false, "standard library and testing helpers only"},
		{"roles/controller/zk/zktest", module + "/roles/controller/zk/jute", false, "standard library and testing helpers only"},
	}
	for _, tc := range cases {
		t.Run(tc.pkg+"->"+tc.imp, func(t *testing.T) {
			t.Parallel()
			got := strings.Join(checkImport(tc.pkg, tc.imp, tc.fromTests), "\n")
			if tc.want == "" && got != "" {
				t.Fatalf("want no violation, got %q", got)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("want a violation containing %q, got %q", tc.want, got)
			}
		})
	}
}
