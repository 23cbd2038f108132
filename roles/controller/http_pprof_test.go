package controller

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHTTP_PprofIsOptInAndBehindTheToken(t *testing.T) {
	get := func(url, token string) int {
		req, err := http.NewRequest("GET", url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	off := startHTTPNode(t, map[uint64]string{1: "mem-1"}, nil)
	require.Equal(t, 404, get("http://"+off.HTTPAddr()+"/debug/pprof/goroutine?debug=1", ""), "off by default")

	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	on := startHTTPNode(t, map[uint64]string{1: "mem-1"}, func(cfg *Config) {
		cfg.EnablePprof, cfg.APITokenFile = true, tokenFile
	})
	url := "http://" + on.HTTPAddr() + "/debug/pprof/goroutine?debug=1"
	require.Equal(t, 401, get(url, ""), "profiles need the token")
	require.Equal(t, 200, get(url, "s3cret"))
}
