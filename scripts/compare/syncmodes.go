package main

// compare syncmodes: how long one fdatasync of a small append takes on
// this machine's disk, by how the log file's blocks were prepared, with
// one writer and with as many as a 3-node cluster on one machine has
// (docs/PERFORMANCE.md, "The log file's blocks"). Pebble's WAL, which
// holds corral's raft log, reserves its blocks with
// fallocate(FALLOC_FL_KEEP_SIZE), so every append grows the file and its
// fdatasync commits the new size too; etcd's WAL and ZooKeeper's
// transaction log prepare their files differently. The question it
// answers: would writing into blocks already written (a recycled file)
// shorten the syncs under a put?

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// syncMode prepares a fresh log file before the appends.
type syncMode struct {
	name string
	prep func(f *os.File, size int64) error
}

var syncModes = []syncMode{
	{"append", func(*os.File, int64) error { return nil }},
	{"keep-size", func(f *os.File, size int64) error { // Pebble's WAL
		return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
	}},
	{"allocated", func(f *os.File, size int64) error { // fallocate mode 0: the size set, extents unwritten
		return unix.Fallocate(int(f.Fd()), 0, 0, size)
	}},
	{"written", func(f *os.File, size int64) error { // a recycled file: blocks written before
		if _, err := f.Write(make([]byte, size)); err != nil {
			return err
		}
		return f.Sync()
	}},
}

func runSyncModes(args []string) error {
	flags := flag.NewFlagSet("compare syncmodes", flag.ContinueOnError)
	dir := flags.String("dir", os.TempDir(), "directory on the disk to measure (files are removed after)")
	writersList := flags.String("writers", "1,3", "comma-separated numbers of concurrent writers, one file each")
	syncs := flags.Int("syncs", 2000, "appends, each followed by fdatasync, per writer (1-100000)")
	record := flags.Int("record", 400, "bytes per append (1-65536)")
	gap := flags.Duration("gap", 500*time.Microsecond, "pause after each sync, as between a client's puts")
	rounds := flags.Int("rounds", 2, "times through every mode (1-20)")
	slowOver := flags.Duration("slow", 0, "print every sync slower than this, with the time it started (0: none)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	slow := newSlowLog(os.Stdout, *slowOver)
	if *syncs < 1 || *syncs > 100000 || *record < 1 || *record > 65536 || *rounds < 1 || *rounds > 20 {
		return errors.New("-syncs must be 1-100000, -record 1-65536 and -rounds 1-20")
	}
	var writers []int
	for _, s := range strings.Split(*writersList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 16 {
			return fmt.Errorf("-writers: %q is not a number from 1 to 16", s)
		}
		writers = append(writers, n)
	}
	size := int64(*syncs) * int64(*record)
	fmt.Printf("# fdatasync after each %d-byte append, %d per writer, in %s\n", *record, *syncs, *dir)
	for r := 1; r <= *rounds; r++ {
		for _, w := range writers {
			for _, m := range syncModes {
				d, err := syncRun(*dir, m, w, *syncs, *record, size, *gap, slow)
				if err != nil {
					return fmt.Errorf("%s, %d writers: %w", m.name, w, err)
				}
				fmt.Printf("round %d  writers=%d  %-9s  p50=%6.3fms  p90=%6.3fms  p99=%6.3fms  p99.9=%6.3fms  max=%6.3fms\n",
					r, w, m.name, msOf(pctOf(d, 0.50)), msOf(pctOf(d, 0.90)), msOf(pctOf(d, 0.99)), msOf(pctOf(d, 0.999)), msOf(d[len(d)-1]))
			}
		}
	}
	return nil
}

// syncRun runs writers appenders at once, each on a file of its own
// prepared by m, and returns every sync's duration, sorted.
func syncRun(dir string, m syncMode, writers, syncs, record int, size int64, gap time.Duration, slow *slowLog) ([]time.Duration, error) {
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			d, err := syncFile(filepath.Join(dir, fmt.Sprintf("corral-syncmodes-%d-%d", os.Getpid(), w)), m, syncs, record, size, gap, slow)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, d...)
			errs = append(errs, err)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.Sort(all)
	return all, nil
}

func syncFile(path string, m syncMode, syncs, record int, size int64, gap time.Duration, slow *slowLog) ([]time.Duration, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	defer f.Close()
	if err := m.prep(f, size); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", path, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	buf := make([]byte, record)
	out := make([]time.Duration, 0, syncs)
	for range syncs {
		if _, err := f.Write(buf); err != nil {
			return nil, err
		}
		t := time.Now()
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return nil, fmt.Errorf("fdatasync %s: %w", path, err)
		}
		d := time.Since(t)
		out = append(out, d)
		slow.note("fdatasync "+m.name, t, d)
		time.Sleep(gap) // the workload's shape (a client between puts), not a wait for a condition
	}
	return out, nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
