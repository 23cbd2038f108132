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

// serversSwitches is how many times the threads of the processes pids
// have been switched off their CPU so far, voluntarily (to wait: a futex,
// a socket, a timer) or not, from /proc/PID/task/*/status. Threads that
// exit between two readings take their counts with them, so a server
// that ends threads during a run is undercounted (Go keeps its threads).
// A process that is gone or unreadable counts 0.
func serversSwitches(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
			if err != nil {
				continue // the thread ended meanwhile
			}
			total += ctxtSwitches(string(b))
		}
	}
	return total
}

// ctxtSwitches adds up a status file's voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches.
func ctxtSwitches(status string) int64 {
	var n int64
	for _, line := range strings.Split(status, "\n") {
		name, val, ok := strings.Cut(line, ":")
		if ok && (name == "voluntary_ctxt_switches" || name == "nonvoluntary_ctxt_switches") {
			v, _ := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			n += v
		}
	}
	return n
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
