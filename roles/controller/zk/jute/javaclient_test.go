package jute_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
	"github.com/corral-dev/corral/roles/controller/zk/zktest"
)

// ZooKeeper's own Java client (zkCli's ZooKeeperMain, from Debian's
// zookeeper package) against the scripted server of interop_test.go: the
// reference client, which Curator builds on, sends the readOnly flag
// go-zookeeper omits, and must read what jute encodes. It fails without
// java and the package (zktest.Need), unless -short skips it.

// runZkCli runs one zkCli command against a fake server that answers each
// request with answer, and returns the command's output, the connect
// request and the requests it sent.
func runZkCli(t *testing.T, answer func(jute.Request) (jute.Code, jute.Record), args ...string) (string, jute.ConnectRequest, []jute.Request) {
	t.Helper()
	s := startFakeZK(t, 0x5eed, []byte("0123456789abcdef"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", "/etc/zookeeper/conf:" + zktest.Jar,
		"org.apache.zookeeper.ZooKeeperMain", "-server", s.addr()}, args...)...)
	done := async(func() struct {
		out []byte
		err error
	} {
		out, err := cmd.CombinedOutput()
		return struct {
			out []byte
			err error
		}{out, err}
	})

	var cr jute.ConnectRequest
	var seen []jute.Request
	for {
		select {
		case cr = <-s.connReq:
		case req := <-s.reqs:
			seen = append(seen, req)
			code, body := answer(req)
			s.reply(req, code, body)
		case err := <-s.errs:
			t.Fatalf("fake server: %v", err)
		case res := <-done:
			// zkCli exits after its command, with or without closeSession.
			return string(res.out), cr, seen
		case <-ctx.Done():
			t.Fatal("zkCli did not finish within a minute")
		}
	}
}

func TestJavaClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	zktest.Need(t)
	answer := func(req jute.Request) (jute.Code, jute.Record) {
		switch b := req.Body.(type) {
		case *jute.CreateRequest:
			return jute.CodeOK, &jute.PathResponse{Path: b.Path + "0000000042"}
		case *jute.PathWatchRequest:
			switch req.Header.Type {
			case jute.OpGetData:
				return jute.CodeOK, &jute.GetDataResponse{Data: []byte("hello from jute"), Stat: stat}
			case jute.OpGetChildren:
				return jute.CodeOK, &jute.StringsResponse{Strings: []string{"kid1", "kid2"}}
			case jute.OpGetChildren2:
				return jute.CodeOK, &jute.GetChildren2Response{Children: []string{"kid1", "kid2"}, Stat: stat}
			case jute.OpExists:
				return jute.CodeNoNode, nil
			}
		case *jute.Empty:
			return jute.CodeOK, &jute.Empty{}
		}
		return jute.CodeUnimplemented, nil
	}

	out, cr, seen := runZkCli(t, answer, "get", "-s", "/jc")
	require.True(t, cr.HasReadOnly, "the Java client sends readOnly")
	require.False(t, cr.ReadOnly)
	require.Zero(t, cr.SessionID)
	require.NotEmpty(t, seen)
	require.Equal(t, jute.OpGetData, seen[0].Header.Type)
	require.Equal(t, &jute.PathWatchRequest{Path: "/jc"}, seen[0].Body)
	for _, line := range []string{"hello from jute", "cZxid = 0xb", "mZxid = 0xc", "pZxid = 0xd",
		"cversion = 4", "dataVersion = 3", "aclVersion = 5", "ephemeralOwner = 0x77",
		"dataLength = 5", "numChildren = 6"} {
		require.Contains(t, out, line)
	}

	out, _, seen = runZkCli(t, answer, "create", "-s", "-e", "/jc/q-", "payload")
	require.NotEmpty(t, seen)
	require.Equal(t, jute.OpCreate, seen[0].Header.Type)
	c := seen[0].Body.(*jute.CreateRequest)
	require.Equal(t, "/jc/q-", c.Path)
	require.Equal(t, []byte("payload"), c.Data)
	require.Equal(t, jute.FlagEphemeralSequential, c.Flags)
	require.Equal(t, []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "anyone"}}}, c.ACL)
	require.Contains(t, out, "Created /jc/q-0000000042")

	out, _, seen = runZkCli(t, answer, "ls", "-s", "/jc")
	require.NotEmpty(t, seen)
	require.Equal(t, jute.OpGetChildren2, seen[0].Header.Type) // ls -s wants the Stat too
	require.Contains(t, out, "[kid1, kid2]")
	require.Contains(t, out, "numChildren = 6")

	out, _, _ = runZkCli(t, answer, "stat", "/missing")
	require.True(t, strings.Contains(out, "does not exist"), "zkCli output:\n%s", out)
}
