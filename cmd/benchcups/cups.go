package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// cupsQueue submits to and reads back one CUPS queue with the stock client
// tools, as a store's POS would print through CUPS.
type cupsQueue struct {
	name string
}

// lpResult is one `lp` run: whether CUPS took the job, its id and, when it
// refused, what lp said.
type lpResult struct {
	ok    bool
	jobID string
	msg   string
	took  time.Duration
}

var requestIDRE = regexp.MustCompile(`request id is (\S+)`)

// submit runs `lp -d QUEUE -o raw -t TITLE FILE`. An exit status other than
// 0 is CUPS refusing the job.
func (q cupsQueue) submit(ctx context.Context, title, file string) lpResult {
	start := time.Now()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "lp", "-d", q.name, "-o", "raw", "-t", title, file)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	r := lpResult{took: time.Since(start), msg: strings.TrimSpace(out.String())}
	if err != nil {
		r.msg = fmt.Sprintf("%v: %s", err, r.msg)
		return r
	}
	r.ok = true
	if m := requestIDRE.FindStringSubmatch(out.String()); m != nil {
		r.jobID = m[1]
	}
	return r
}

// runTool runs a CUPS tool and returns its combined output, error included:
// these outputs are reported as they are.
func runTool(ctx context.Context, name string, args ...string) string {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	s := strings.TrimRight(string(out), "\n")
	if err != nil {
		s += fmt.Sprintf("\n(%s %s: %v)", name, strings.Join(args, " "), err)
	}
	return s
}

// jobState says where CUPS lists job: "completed", "not-completed" (pending,
// held, processing or stopped) or "unknown".
func (q cupsQueue) jobState(ctx context.Context, job string) string {
	for _, which := range []string{"completed", "not-completed"} {
		for _, line := range strings.Split(runTool(ctx, "lpstat", "-W", which, "-o", q.name), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == job {
				return which
			}
		}
	}
	return "unknown"
}

// jobLong is the `lpstat -W all -l` entry for job: its line and the indented
// lines under it (status, alerts).
func (q cupsQueue) jobLong(ctx context.Context, job string) string {
	var out []string
	in := false
	for _, line := range strings.Split(runTool(ctx, "lpstat", "-W", "all", "-l", "-o", q.name), "\n") {
		if line != "" && line[0] != ' ' && line[0] != '\t' {
			f := strings.Fields(line)
			in = len(f) > 0 && f[0] == job
		}
		if in {
			out = append(out, strings.TrimRight(line, " "))
		}
	}
	return strings.Join(out, "\n")
}

// notCompleted counts the queue's jobs CUPS has not finished.
func (q cupsQueue) notCompleted(ctx context.Context) int {
	n := 0
	for _, line := range strings.Split(runTool(ctx, "lpstat", "-W", "not-completed", "-o", q.name), "\n") {
		if strings.HasPrefix(line, q.name+"-") {
			n++
		}
	}
	return n
}

// printerLong is `lpstat -l -p QUEUE`: whether the queue is enabled and its
// last status message.
func (q cupsQueue) printerLong(ctx context.Context) string {
	return runTool(ctx, "lpstat", "-l", "-p", q.name)
}

// cancelAll removes every job left on the queue, so one measurement does
// not spill into the next.
func (q cupsQueue) cancelAll(ctx context.Context) {
	runTool(ctx, "cancel", "-a", q.name)
}
