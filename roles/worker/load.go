package worker

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/corral-dev/corral/transport"
)

// procLoad samples the machine's CPU use (from /proc/stat deltas) and
// memory use (MemTotal - MemAvailable) for heartbeats.
type procLoad struct {
	mu        sync.Mutex
	lastBusy  uint64
	lastTotal uint64
	cpuMillis uint64
}

func (p *procLoad) sample() transport.WorkerLoad {
	p.mu.Lock()
	defer p.mu.Unlock()
	if busy, total, ok := readProcStat(); ok {
		if p.lastTotal > 0 && total > p.lastTotal {
			frac := float64(busy-p.lastBusy) / float64(total-p.lastTotal)
			p.cpuMillis = uint64(frac * float64(runtime.NumCPU()) * 1000)
		}
		p.lastBusy, p.lastTotal = busy, total
	}
	var memMB uint64
	if total, ok := meminfo("MemTotal"); ok {
		if avail, ok := meminfo("MemAvailable"); ok && avail <= total {
			memMB = (total - avail) / 1024
		}
	}
	// Running tasks arrive with the jobs issue (Config.Load).
	return transport.WorkerLoad{CPUMillis: p.cpuMillis, MemoryMB: memMB}
}

// readProcStat returns busy and total jiffies from the "cpu" line.
func readProcStat() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i != 3 && i != 4 { // idle and iowait
			busy += v
		}
	}
	return busy, total, true
}
