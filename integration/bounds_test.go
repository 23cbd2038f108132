package integration

// Resource bounds of one controller (issue 18, "Quotas and bounds"):
// paginated range reads, watch buffers that grow on demand and their
// limit, idle connections closed after --http-idle-timeout, and the
// --http-max-conns connection limit. Each test runs one real controller
// process and reads its memory from /proc.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// procMemKB reads a VmRSS-style line (in kB) of pid's /proc status.
func procMemKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// boundedGroup runs functions with at most limit at once and keeps the
// first error.
type boundedGroup struct {
	wg   sync.WaitGroup
	sem  chan struct{}
	once sync.Once
	err  error
}

func newBoundedGroup(limit int) *boundedGroup {
	return &boundedGroup{sem: make(chan struct{}, limit)}
}

func (g *boundedGroup) Go(fn func() error) {
	g.sem <- struct{}{}
	g.wg.Add(1)
	go func() {
		defer func() { <-g.sem; g.wg.Done() }()
		if err := fn(); err != nil {
			g.once.Do(func() { g.err = err })
		}
	}()
}

func (g *boundedGroup) Wait() error {
	g.wg.Wait()
	return g.err
}

// startOne starts a one-controller cluster with extra flags and waits
// for it to lead.
func startOne(t *testing.T, extra ...string) (*cluster, *node) {
	t.Helper()
	c := newCluster(t, 1, extra...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	return c, c.nodes[1]
}

// boundsKeys is how many keys TestBoundsRangeRSS writes: 50,000 in CI,
// CORRAL_BOUNDS_KEYS=200000 for the figure in docs/PERFORMANCE.md.
func boundsKeys(t *testing.T) int {
	if s := os.Getenv("CORRAL_BOUNDS_KEYS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}
	return 50000
}

// A range over many keys comes back in pages, and six clients reading it
// all at once do not grow the controller by more than a bounded amount
// (before pagination each built the whole answer: 243 MB apiece).
func TestBoundsRangeRSS(t *testing.T) {
	n := boundsKeys(t)
	// The controller runs with GOGC=25, so that its peak RSS follows the
	// memory the reads hold rather than the garbage collector's pacing:
	// with the default 100, garbage may grow to the size of the live
	// heap (here the keys just written) before a collection, whatever
	// the reads do.
	t.Setenv("GOGC", "25")
	c, nd := startOne(t)
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	value := []byte(strings.Repeat("v", 500))
	start := time.Now()
	g := newBoundedGroup(64)
	for i := range n {
		g.Go(func() error {
			_, err := cl.Put(ctx, fmt.Sprintf("big/%07d", i), value)
			return err
		})
	}
	require.NoError(t, g.Wait())
	t.Logf("wrote %d keys of %d bytes in %v (64 concurrent clients)", n, len(value), time.Since(start).Round(time.Millisecond))

	pid := nd.cmd.Process.Pid
	rssBefore := procMemKB(t, pid, "VmRSS")
	// Reset the peak (VmHWM) to the current RSS, so it measures the
	// reads below and not the writes above (Linux >= 4.0).
	require.NoError(t, os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0))

	// Six clients read the whole range at once, the largest page each
	// time; every key comes back once, in order.
	start = time.Now()
	scans := newBoundedGroup(6)
	pages := make([]int, 6)
	for s := range 6 {
		scans.Go(func() error {
			seen := 0
			_, err := cl.ListPages(ctx, "big/", 10000, func(p client.Page) error {
				for _, kv := range p.KVs {
					if want := fmt.Sprintf("big/%07d", seen); kv.Key != want {
						return fmt.Errorf("key %d is %q, want %q", seen, kv.Key, want)
					}
					seen++
				}
				pages[s]++
				return nil
			})
			if err == nil && seen != n {
				err = fmt.Errorf("read %d keys, want %d", seen, n)
			}
			return err
		})
	}
	scanErr := scans.Wait()
	rssAfter, hwm := procMemKB(t, pid, "VmRSS"), procMemKB(t, pid, "VmHWM")
	t.Logf("6 concurrent full scans of %d keys (%d pages each) in %v: controller VmRSS %d MB before, %d MB after, peak (VmHWM) %d MB",
		n, pages[0], time.Since(start).Round(time.Millisecond), rssBefore>>10, rssAfter>>10, hwm>>10)
	// Paged, the scans grew the controller's peak by 0-21 MB at 50,000
	// keys; with the page limits disabled, by 129 MB (and by 836 MB when
	// each answer was also encoded whole).
	require.Less(t, hwm-rssBefore, int64(48<<10), "the scans grew the controller by %d MB", (hwm-rssBefore)>>10)
	require.NoError(t, scanErr)
	require.Greater(t, pages[0], 1, "the range came back in one page")

	// A client that names no limit gets the first page and a marker.
	resp, err := http.Get(nd.endpoint() + "/v1/kv/big/?prefix=true")
	require.NoError(t, err)
	var first struct {
		KVs  []json.RawMessage `json:"kvs"`
		More bool              `json:"more"`
		Next string            `json:"next"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&first))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, first.KVs, 1000)
	require.True(t, first.More)
	require.Equal(t, "big/0000999", first.Next)
}

// openWatch opens a raw watch stream and reads its first line (the
// watch is then registered on the controller).
func openWatch(t *testing.T, tr *http.Transport, url string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadBytes('\n'); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// 1,000 open watches cost a bounded amount of controller memory (each
// reserved a 4,096-event buffer before: 400 cost 110 MB), and past
// --max-watches a watch is refused with 429 too_many_watches.
func TestBoundsWatchMemoryAndLimit(t *testing.T) {
	const watches = 1000
	_, nd := startOne(t, fmt.Sprintf("--max-watches=%d", watches), "--http-max-conns=1100")
	pid := nd.cmd.Process.Pid
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()

	rssBefore := procMemKB(t, pid, "VmRSS")
	var mu sync.Mutex
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	g := newBoundedGroup(32)
	for i := range watches {
		g.Go(func() error {
			resp, err := openWatch(t, tr, fmt.Sprintf("%s/v1/watch/w/%d/?progress_interval=1h", nd.endpoint(), i))
			if err != nil {
				return err
			}
			mu.Lock()
			open = append(open, resp)
			mu.Unlock()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("watch %d: %s", i, resp.Status)
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	rssAfter := procMemKB(t, pid, "VmRSS")
	per := (rssAfter - rssBefore) * 1024 / watches
	t.Logf("%d open watches: controller VmRSS %d MB before, %d MB after: %d bytes per watch (connection included)",
		watches, rssBefore>>10, rssAfter>>10, per)
	require.Less(t, per, int64(64<<10), "a watch costs %d bytes", per)

	// One more is refused, with a JSON error that says why.
	resp, err := openWatch(t, tr, nd.endpoint()+"/v1/watch/w/extra")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	var body struct{ Code, Error string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "too_many_watches", body.Code)
	require.Contains(t, body.Error, "--max-watches")
}

// get sends one keep-alive GET /healthz on c and reads the answer.
func get(c net.Conn, br *bufio.Reader) error {
	if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	return nil
}

// An idle keep-alive connection is closed after --http-idle-timeout.
func TestBoundsIdleConnectionsClosed(t *testing.T) {
	_, nd := startOne(t, "--http-idle-timeout=1s")
	c, err := net.Dial("tcp", nd.httpAddr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	require.NoError(t, get(c, br))
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = br.ReadByte() // returns when the controller closes the connection
	require.ErrorIs(t, err, io.EOF, "the idle connection was not closed")
	t.Logf("idle connection closed after %v", time.Since(start).Round(time.Millisecond))
	require.Less(t, time.Since(start), 10*time.Second)
}

// Past --http-max-conns a connection is not served until another closes.
func TestBoundsConnectionLimit(t *testing.T) {
	const limit = 8
	_, nd := startOne(t, fmt.Sprintf("--http-max-conns=%d", limit))
	// The harness's own keep-alive connections (waitLeader) count too.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range limit {
		c, err := net.Dial("tcp", nd.httpAddr)
		require.NoError(t, err)
		conns = append(conns, c)
		require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
		require.NoError(t, get(c, bufio.NewReader(c)), "connection %d of %d", i+1, limit)
	}
	extra, err := net.Dial("tcp", nd.httpAddr) // the kernel's backlog accepts it
	require.NoError(t, err)
	defer extra.Close()
	br := bufio.NewReader(extra)
	_, err = fmt.Fprintf(extra, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, extra.SetReadDeadline(time.Now().Add(time.Second)))
	_, err = br.ReadByte()
	var ne net.Error
	require.ErrorAs(t, err, &ne, "connection %d was served past the limit of %d", limit+1, limit)
	require.True(t, ne.Timeout())

	require.NoError(t, conns[0].Close())
	require.NoError(t, extra.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "connection %d was not served once another closed", limit+1)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
