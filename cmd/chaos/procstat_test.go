package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseProc(t *testing.T) {
	stat := []byte("4242 (print gate) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 12 0 100 123456 789 0\n")
	ticks, err := parseStatTicks(stat)
	if err != nil || ticks != 300 {
		t.Fatalf("ticks %d, %v; want 300", ticks, err)
	}
	if _, err := parseStatTicks([]byte("4242 no name here")); err == nil {
		t.Error("a stat line without ')' parsed")
	}
	rss, err := parseStatusRSS([]byte("Name:\tprintgate\nVmPeak:\t  9000 kB\nVmRSS:\t   30720 kB\n"))
	if err != nil || rss != 30720 {
		t.Fatalf("rss %d, %v; want 30720", rss, err)
	}
	if _, err := parseStatusRSS([]byte("Name:\tx\n")); err == nil {
		t.Error("a status without VmRSS parsed")
	}
	now := time.Now()
	c, ok := cpuPercent(procSample{pid: 1, at: now, cpuTicks: 100}, procSample{pid: 1, at: now.Add(2 * time.Second), cpuTicks: 150})
	if !ok || c != 25 {
		t.Errorf("cpu %v %v; want 25%%", c, ok)
	}
	if _, ok := cpuPercent(procSample{pid: 1, at: now}, procSample{pid: 2, at: now.Add(time.Second)}); ok {
		t.Error("CPU computed across two processes (a restart)")
	}
}

func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	s, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.rssKiB == 0 {
		t.Error("RSS of this process read as 0")
	}
}
