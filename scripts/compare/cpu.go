package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times
// (100 on every architecture Go supports on Linux).
const clockTick = 10 * time.Millisecond

// serversCPU is the user plus system CPU time the processes pids have
// used so far (a process that is gone or unreadable counts 0).
func serversCPU(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if ticks, err := procCPU(pid); err == nil {
			total += time.Duration(ticks) * clockTick
		}
	}
	return total
}

// procCPU is a process's user plus system CPU time so far, in clock ticks
// (/proc/PID/stat). Fields count from after the command name's closing
// parenthesis, since the name may hold spaces: utime is field 14, stime 15.
func procCPU(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("no command name in stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, nil
}

// selfCPU is the CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parsePids reads a comma-separated pid list ("" is none).
func parsePids(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-cpu-pids: %q is no pid", p)
		}
		out = append(out, n)
	}
	return out, nil
}
