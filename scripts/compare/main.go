// Command compare drives the same write load against corral, etcd and
// ZooKeeper, so that docs/PERFORMANCE.md can put their figures side by
// side from one run on one machine (scripts/compare.sh starts the three
// clusters and calls it). It is a nested module so that the main module
// does not depend on etcd's client.
//
//	compare -system corral|corral-http|corral-pinned|corral-nethttp|etcd|zk -endpoints A,B,C -clients N -duration 10s -value-size 256 -keys 1000
//
// It prints one line: system, clients, ops, errors, ops/s, p50, p99, max.
//
//	compare failover -trials 10 -corral URLS -etcd H:P,... -zk H:P,...
//
// measures the write gap after kill -9 of each system's leader instead
// (failover.go), and
//
//	compare zk -corral H:P,... -zk H:P,... -clients "1 16 128" -sessions 10000
//
// puts corral's ZooKeeper port beside ZooKeeper (zkperf.go), and
//
//	compare zkresume -first H:P -others H:P,H:P -pid PID -sessions 2000
//
// opens sessions on one server, kills it and times their resumes on the
// others (zkresume.go), and
//
//	compare restart -keys 1000000 -trials 3 -corral URLS -etcd H:P,... -zk H:P,...
//
// loads N keys, reports memory per key and times a restart of all three
// nodes to the first read and write (restart.go), and
//
//	compare goals -throughput FILE -restart FILE.json
//
// checks issue 21's goals against those outputs (goals.go), and
//
//	compare syncmodes -dir DIR -writers 1,3
//
// times fdatasync on this disk by how a log file's blocks were prepared
// (syncmodes.go).
// Each client writes keys bench/k<i> in turn (etcd: puts; corral: PUT
// /v1/kv; ZooKeeper: setData of znodes /bench/k<i> created first), so all
// three do a replicated, fsynced overwrite of a 256-byte value per op.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// writer does one write of value to key i.
type writer interface {
	write(ctx context.Context, i int, value []byte) error
	close()
}

func main() {
	if mode := os.Getenv(hopServeEnv); mode != "" {
		if err := hopServe(mode); err != nil {
			fmt.Fprintln(os.Stderr, "compare hop server:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "hop" {
		if err := runHop(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare hop:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "failover" {
		if err := runFailover(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare failover:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "zk" {
		if err := runZKPerf(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare zk:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "zkresume" {
		if err := runZKResume(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare zkresume:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "syncmodes" {
		if err := runSyncModes(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare syncmodes:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "goals" {
		if err := runGoals(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare goals:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "restart" {
		if err := runRestart(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare restart:", err)
			os.Exit(1)
		}
		return
	}
	system := flag.String("system", "", "corral, corral-http, corral-pinned, corral-nethttp, etcd or zk")
	endpoints := flag.String("endpoints", "", "comma-separated endpoints (corral: http URLs; etcd: host:port; zk: host:port)")
	clients := flag.Int("clients", 1, "concurrent clients, each with its own connection")
	duration := flag.Duration("duration", 10*time.Second, "how long to write")
	valueSize := flag.Int("value-size", 256, "bytes per value")
	keys := flag.Int("keys", 1000, "distinct keys")
	cpuProfile := flag.String("cpuprofile", "", "write this load generator's CPU profile to the file")
	var quiet quietFlags
	quiet.register(flag.CommandLine, "before writing", 30*time.Second)
	cpuPids := flag.String("cpu-pids", "", "comma-separated pids of the system's servers: report their CPU time per op, and this client's")
	flag.Parse()
	servers, err := parsePids(*cpuPids)
	if err != nil {
		fmt.Fprintf(os.Stderr, "compare: %v\n", err)
		os.Exit(1)
	}
	eps := strings.Split(*endpoints, ",")
	if *system == "" || *endpoints == "" || *clients < 1 || *clients > 1024 || *duration <= 0 || *duration > 10*time.Minute ||
		*valueSize < 1 || *valueSize > 1<<20 || *keys < 1 || *keys > 100000 ||
		quiet.check() != nil {
		fmt.Fprintln(os.Stderr, "compare: want -system corral|etcd|zk -endpoints A,B,C, 1-1024 clients, a duration up to 10m, "+
			"a value size of 1 byte to 1 MiB, 1-100,000 keys, -quiet-idle 0-0.99 and -quiet-within up to 10m")
		os.Exit(1)
	}
	newWriter := map[string]func(eps []string, n int) (writer, error){
		"corral": newCorral, "corral-http": newCorralHTTP, "corral-pinned": newCorralPinned, "corral-nethttp": newCorralNetHTTP, "etcd": newEtcd, "zk": newZK,
	}[*system]
	if newWriter == nil {
		fmt.Fprintf(os.Stderr, "compare: unknown -system %q: want corral, corral-http, corral-pinned, corral-nethttp, etcd or zk\n", *system)
		os.Exit(1)
	}
	if *system == "zk" {
		if err := zkPrepare(eps, *keys); err != nil {
			fmt.Fprintf(os.Stderr, "compare: create the znodes: %v\n", err)
			os.Exit(1)
		}
	}
	ws := make([]writer, *clients)
	for c := range ws {
		w, err := newWriter(eps, c)
		if err != nil {
			fmt.Fprintf(os.Stderr, "compare: connect client %d: %v\n", c, err)
			os.Exit(1)
		}
		ws[c] = w
	}
	value := []byte(strings.Repeat("v", *valueSize))
	before := quiet.wait()
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	if *cpuProfile != "" {
		stop, err := startProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "compare: %v\n", err)
			os.Exit(1)
		}
		defer stop()
	}
	start := time.Now()
	srv0, self0 := serversCPU(servers), selfCPU()
	lat, errors := timedWrites(ctx, len(ws), func(ctx context.Context, c, k int) error {
		return ws[c].write(ctx, (c+k*len(ws))%*keys, value)
	})
	elapsed := time.Since(start)
	srvCPU, selfUsed := serversCPU(servers)-srv0, selfCPU()-self0
	for _, w := range ws {
		w.close()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	var maxLat time.Duration
	if len(lat) > 0 {
		maxLat = lat[len(lat)-1]
	}
	cpu := ""
	if len(servers) > 0 && len(lat) > 0 {
		// CPU per acknowledged op: the servers' (10 ms ticks, so read it
		// over runs of seconds) and this load generator's own.
		n := time.Duration(len(lat))
		cpu = fmt.Sprintf("    cpu/op: servers=%s client=%s", (srvCPU / n).Round(time.Microsecond), (selfUsed / n).Round(time.Microsecond))
	}
	fmt.Println(kvLine(*system, *clients, len(lat), errors, float64(len(lat))/elapsed.Seconds(), pct(0.50), pct(0.99), maxLat, cpu, before))
}

// kvLine is the one line a throughput run prints (compare goals reads it
// back, after compare.sh has put "round-R " in front).
func kvLine(system string, clients, ops, errors int, opsPerS float64, p50, p99, maxLat time.Duration, cpu string, quiet quietResult) string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	return fmt.Sprintf("%-6s clients=%-4d ops=%-7d errors=%-4d ops/s=%-8.1f p50=%-9s p99=%-9s max=%-9s%s    before: %s",
		system, clients, ops, errors, opsPerS, r(p50), r(p99), r(maxLat), cpu, quiet)
}

// timedWrites runs writers goroutines, each calling write (its k-th op)
// until ctx ends, and returns the latencies of the writes that succeeded
// and the number that failed. A write cut off by ctx's end is not counted.
func timedWrites(ctx context.Context, writers int, write func(ctx context.Context, w, k int) error) ([]time.Duration, int) {
	var (
		mu     sync.Mutex
		lat    []time.Duration
		errors int
		wg     sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for k := 0; ctx.Err() == nil; k++ {
				t0 := time.Now()
				err := write(ctx, w, k)
				if ctx.Err() != nil {
					break
				}
				if err != nil {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat, errors = append(lat, mine...), errors+bad
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, errors
}
