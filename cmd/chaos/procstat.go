package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux the agent ships for.
const clockTicks = 100

// procSample is one look at a process in /proc.
type procSample struct {
	pid      int
	at       time.Time
	cpuTicks uint64 // utime + stime
	rssKiB   uint64
}

// readProc reads /proc/PID/stat and /proc/PID/status (Linux only; an error
// elsewhere, and the run reports no CPU or RSS).
func readProc(pid int) (procSample, error) {
	s := procSample{pid: pid, at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("read the agent's stat: %w", err)
	}
	ticks, err := parseStatTicks(stat)
	if err != nil {
		return s, err
	}
	s.cpuTicks = ticks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("read the agent's status: %w", err)
	}
	s.rssKiB, err = parseStatusRSS(status)
	return s, err
}

// parseStatTicks returns utime + stime from a /proc/PID/stat line. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted after its last ')'.
func parseStatTicks(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc stat %q: no ')'", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// After the name: state is field 3, utime 14 and stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc stat: %d fields after the name, want ≥ 13", len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc stat utime %q stime %q", f[11], f[12])
	}
	return u + st, nil
}

// parseStatusRSS returns VmRSS in KiB from /proc/PID/status.
func parseStatusRSS(status []byte) (uint64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				return strconv.ParseUint(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("parse /proc status: no VmRSS line")
}

// cpuPercent is the CPU the process used between two samples of the same
// process, in percent of one core.
func cpuPercent(a, b procSample) (float64, bool) {
	if a.pid != b.pid || !b.at.After(a.at) || b.cpuTicks < a.cpuTicks {
		return 0, false
	}
	used := float64(b.cpuTicks-a.cpuTicks) / clockTicks
	return 100 * used / b.at.Sub(a.at).Seconds(), true
}
