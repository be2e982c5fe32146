//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// TestFsyncBeforeAccept proves that the agent answers 202 to a submitted task
// only after the spool commit that holds the task has been fsync'd
// (docs/DESIGN.md, "The task": accept). Every other test passes with fsync
// switched off, because SIGKILL keeps the page cache: only a power cut loses
// unsynced writes.
//
// The test runs the real `printgate run` under strace, submits tasks over the
// HTTP API (some one after another, some at once so that commits are grouped
// and interleave with the lane's own commits), then reads the syscall trace.
// For every "HTTP/1.1 202" written to a client socket, naming task T, it
// requires, in the order strace saw the syscalls:
//
//  1. a write to spool.db containing T ended before the 202 began (the task
//     is in the file, not only in memory);
//  2. the commit's meta page write (offset page 0 or 1, bbolt's commit
//     point) that follows that write ended before the 202 began;
//  3. an fdatasync or fsync of spool.db started after that meta write ended
//     and returned 0 before the 202 began.
//
// Anchoring on the task's own commit rather than on "the last spool.db write
// before the 202" keeps the check exact while a later commit (another batch,
// a lane moving a task to SENDING) is already writing when the 202 goes out.
//
// Why strace and not a simulated power cut: losing the page cache under a
// running process needs a block-device layer that drops unsynced writes
// (dm-flakey, dm-log-writes, a FUSE file system or a VM snapshot), which
// needs root, kernel modules or nested virtualisation that CI does not
// offer, and even then it shows only that some task was lost, at random.
// strace watches the unmodified binary and reports the order of its writes,
// fsyncs and socket answers directly, so the test fails deterministically,
// naming the 202 that went out before its fsync. It skips when strace is
// missing or ptrace is not permitted; .ci/run installs strace.
func TestFsyncBeforeAccept(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and traces the real binary")
	}
	bin := buildPrintgate(t)
	strace := straceCommand(t, bin)

	dir := t.TempDir()
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const token = "fsync-test-token-0123456789"
	config := filepath.Join(dir, "printgate.toml")
	cfg := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n", dir, port, token, p.Addr())
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	traceLog := filepath.Join(t.TempDir(), "strace.log")
	args := append(append([]string{}, strace[1:]...),
		"-f", "-ttt", "-y",
		// Large enough for a whole 202 answer (headers and the body naming
		// the task) and a whole spool page (holding the task's key).
		"-s", "65536",
		"-o", traceLog,
		"-e", "trace=fdatasync,fsync,write,pwrite64,writev,pwritev,pwritev2,sendto,sendmsg",
		"--", bin, "run", "--config", config)
	start := time.Now()
	proc := startAgentCmd(t, exec.Command(strace[0], args...), base)
	stop := tracedStopper(t, proc)

	// Ten one after another, then two bursts of five at once.
	var tasks []string
	for i := 0; i < 10; i++ {
		no := fmt.Sprintf("FS-S%02d_v1", i)
		tasks = append(tasks, no)
		if code := submit(base, token, no, "k"); code != 202 {
			t.Fatalf("submit %s: HTTP %d\n%s", no, code, proc.logs.String())
		}
	}
	for burst := 0; burst < 2; burst++ {
		var wg sync.WaitGroup
		codes := make([]int, 5)
		nos := make([]string, 5)
		for i := range codes {
			nos[i] = fmt.Sprintf("FS-C%d%d_v1", burst, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = submit(base, token, nos[i], "k")
			}()
		}
		wg.Wait()
		for i, code := range codes {
			if code != 202 {
				t.Fatalf("submit %s: HTTP %d\n%s", nos[i], code, proc.logs.String())
			}
		}
		tasks = append(tasks, nos...)
	}
	stop()

	raw, err := os.ReadFile(traceLog)
	if err != nil {
		t.Fatal(err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	spoolPath := filepath.Join(realDir, "spool.db")
	pageSize := spoolPageSize(t, spoolPath)
	tr := parseStrace(string(raw), spoolPath)
	problems := checkFsyncBeforeAck(tr, tasks, pageSize)
	for _, pr := range problems {
		t.Error(pr)
	}
	if len(problems) > 0 {
		kept := filepath.Join(os.TempDir(), fmt.Sprintf("printgate-fsync-strace-%d.log", os.Getpid()))
		if err := os.WriteFile(kept, raw, 0o600); err == nil {
			t.Logf("strace log kept at %s", kept)
		}
		return
	}
	t.Logf("%d tasks acknowledged with 202, each after its commit's fsync; %d spool.db writes, %d spool.db syncs traced in %s",
		len(tasks), tr.countKind(evSpoolWrite), tr.countKind(evSpoolSync), time.Since(start).Round(time.Millisecond))
}

// straceCommand returns the strace binary and the options that work here,
// skipping the test when strace is missing or ptrace is not permitted.
func straceCommand(t *testing.T, bin string) []string {
	t.Helper()
	path, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed, so the order of fsync and 202 cannot be observed (apt-get install strace; .ci/run installs it)")
	}
	var out []byte
	// --seccomp-bpf stops the tracee only on the traced syscalls (much
	// faster); older strace builds lack it.
	for _, extra := range [][]string{{"--seccomp-bpf"}, nil} {
		args := append(append([]string{}, extra...), "-f", "-o", os.DevNull, "-e", "trace=fdatasync", "--", bin, "version")
		out, err = exec.Command(path, args...).CombinedOutput()
		if err == nil {
			return append([]string{path}, extra...)
		}
	}
	if strings.Contains(string(out), "ptrace") || strings.Contains(string(out), "Operation not permitted") {
		t.Skipf("ptrace is not permitted here, so the order of fsync and 202 cannot be observed: %s", strings.TrimSpace(string(out)))
	}
	t.Fatalf("strace does not run: %v\n%s", err, out)
	return nil
}

// tracedStopper returns a function that stops the traced agent gracefully
// (SIGTERM to printgate, strace's only child) and waits until strace has
// written the whole log. If the test ends before it is called, a cleanup
// kills both processes.
func tracedStopper(t *testing.T, proc *agentProc) func() {
	t.Helper()
	child := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", proc.cmd.Process.Pid, proc.cmd.Process.Pid))
		if err != nil {
			return 0
		}
		f := strings.Fields(string(b))
		if len(f) != 1 {
			return 0
		}
		pid, _ := strconv.Atoi(f[0])
		return pid
	}
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		if pid := child(); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		proc.cmd.Process.Kill()
		proc.cmd.Wait()
	})
	return func() {
		t.Helper()
		stopped = true
		// Without the children file, strace passes SIGTERM on to the
		// command it started.
		pid := proc.cmd.Process.Pid
		if c := child(); c > 0 {
			pid = c
		}
		syscall.Kill(pid, syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- proc.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Logf("traced agent exit: %v", err)
			}
		case <-time.After(20 * time.Second):
			if c := child(); c > 0 {
				syscall.Kill(c, syscall.SIGKILL)
			}
			proc.cmd.Process.Kill()
			<-done
			t.Fatalf("traced agent did not stop within 20s of SIGTERM\n%s", proc.logs.String())
		}
	}
}

// spoolPageSize reads the page size from the spool's first meta page (bbolt:
// 16-byte page header, then magic, version, page size, little-endian).
func spoolPageSize(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [28]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		t.Fatalf("read spool header: %v", err)
	}
	ps := int64(binary.LittleEndian.Uint32(b[24:]))
	if ps < 512 || ps&(ps-1) != 0 {
		t.Fatalf("spool header gives page size %d", ps)
	}
	return ps
}

type evKind int

const (
	evOther      evKind = iota
	evSpoolWrite        // a write to spool.db
	evSpoolSync         // fdatasync or fsync of spool.db
	evAck               // an HTTP 202 answer written to a socket
)

// traceEvent is one traced syscall. begin and end are the log lines (0-based)
// where it started and where it returned; they are equal for a syscall that
// strace printed whole, and end is -1 if it never returned in the log.
type traceEvent struct {
	kind       evKind
	tid        string
	name       string
	begin, end int
	beginTS    string
	ret        int64
	offset     int64 // pwrite64's file offset; -1 if the syscall has none
	text       string
}

type straceTrace struct {
	events []*traceEvent
	lines  []string
}

func (tr *straceTrace) countKind(k evKind) int {
	n := 0
	for _, e := range tr.events {
		if e.kind == k {
			n++
		}
	}
	return n
}

var (
	straceLine  = regexp.MustCompile(`^(\d+)\s+(\d+\.\d+)\s+(.*)$`)
	straceStart = regexp.MustCompile(`^(\w+)\((\d+)<([^>]*)>`)
	straceRes   = regexp.MustCompile(`^<\.\.\. (\w+) resumed>`)
	straceRet   = regexp.MustCompile(`\) += (-?\d+)`)
	straceOff   = regexp.MustCompile(`, (\d+)$`)
)

// parseStrace reads an `strace -f -ttt -y -o` log into events, pairing every
// `<unfinished ...>` line with its `<... resumed>` line by thread id. Lines
// are in the order strace observed the syscalls, which is the order used.
func parseStrace(log, spoolPath string) *straceTrace {
	tr := &straceTrace{lines: strings.Split(log, "\n")}
	pending := map[string]*traceEvent{}
	for i, line := range tr.lines {
		m := straceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		tid, ts, rest := m[1], m[2], m[3]
		if r := straceRes.FindStringSubmatch(rest); r != nil {
			e := pending[tid]
			if e == nil || e.name != r[1] {
				continue
			}
			delete(pending, tid)
			e.end = i
			e.ret = parseRet(rest)
			continue
		}
		s := straceStart.FindStringSubmatch(rest)
		if s == nil {
			continue
		}
		e := &traceEvent{tid: tid, name: s[1], begin: i, end: i, beginTS: ts, offset: -1, text: rest}
		target := s[3]
		switch {
		case target == spoolPath && (e.name == "fdatasync" || e.name == "fsync"):
			e.kind = evSpoolSync
		case target == spoolPath:
			e.kind = evSpoolWrite
		case !strings.HasPrefix(target, "/") && strings.Contains(rest, `"HTTP/1.1 202 `):
			e.kind = evAck
		default:
			continue
		}
		args := rest
		if strings.HasSuffix(rest, " <unfinished ...>") {
			args = strings.TrimSuffix(rest, " <unfinished ...>")
			e.end = -1
			pending[tid] = e
		} else {
			if j := strings.LastIndex(args, ") = "); j >= 0 {
				args = args[:j]
			}
			e.ret = parseRet(rest)
		}
		if e.name == "pwrite64" {
			if o := straceOff.FindStringSubmatch(args); o != nil {
				e.offset, _ = strconv.ParseInt(o[1], 10, 64)
			}
		}
		tr.events = append(tr.events, e)
	}
	return tr
}

// parseRet returns the syscall's return value from its completing line, or
// -1 when strace shows none (e.g. `= ?`).
func parseRet(line string) int64 {
	m := straceRet.FindAllStringSubmatch(line, -1)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseInt(m[len(m)-1][1], 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// checkFsyncBeforeAck applies the three rules of TestFsyncBeforeAccept to
// every 202 in the trace and returns one message per violation. It also
// requires exactly one traced 202 per submitted task, so a trace that
// misses the answers cannot pass by having nothing to check.
func checkFsyncBeforeAck(tr *straceTrace, tasks []string, pageSize int64) []string {
	var problems []string
	at := func(line int) string {
		if line < 0 || line >= len(tr.lines) {
			return "never (no return in the trace)"
		}
		return fmt.Sprintf("strace line %d", line+1)
	}
	var writes []*traceEvent
	for _, e := range tr.events {
		if e.kind == evSpoolWrite {
			writes = append(writes, e)
		}
	}
	if len(writes) == 0 {
		return []string{"the trace shows no write to spool.db at all: the trace set or the spool path is wrong, nothing was checked"}
	}
	acks := map[string]int{}
	for _, ack := range tr.events {
		if ack.kind != evAck {
			continue
		}
		task := ""
		for _, no := range tasks {
			if strings.Contains(ack.text, no) {
				task = no
				break
			}
		}
		if task == "" {
			problems = append(problems, fmt.Sprintf("202 at %s (t=%s) names none of the submitted tasks: %.200s", at(ack.begin), ack.beginTS, ack.text))
			continue
		}
		acks[task]++
		done := func(e *traceEvent) bool { return e.end >= 0 && e.end < ack.begin }

		// 1. The task's first write to spool.db.
		wi := -1
		for i, w := range writes {
			if strings.Contains(w.text, task) {
				wi = i
				break
			}
		}
		if wi < 0 || !done(writes[wi]) {
			problems = append(problems, fmt.Sprintf("202 for %s at %s (t=%s) went out before %s was written to spool.db", task, at(ack.begin), ack.beginTS, task))
			continue
		}
		// 2. The meta page write that commits it.
		var meta *traceEvent
		for _, w := range writes[wi+1:] {
			if w.offset == 0 || w.offset == pageSize {
				meta = w
				break
			}
		}
		if meta == nil || !done(meta) {
			problems = append(problems, fmt.Sprintf("202 for %s at %s (t=%s) went out before the commit holding it wrote its meta page (first write of %s at %s)", task, at(ack.begin), ack.beginTS, task, at(writes[wi].begin)))
			continue
		}
		// 3. A successful sync of spool.db between that meta write and the 202.
		synced := false
		for _, e := range tr.events {
			if e.kind == evSpoolSync && e.begin > meta.end && done(e) && e.ret == 0 {
				synced = true
				break
			}
		}
		if !synced {
			problems = append(problems, fmt.Sprintf("202 for %s at %s (t=%s) was not preceded by an fdatasync/fsync of spool.db after its commit's last write (meta page write at %s, t=%s): the task was acknowledged while still only in the page cache",
				task, at(ack.begin), ack.beginTS, at(meta.end), meta.beginTS))
		}
	}
	for _, no := range tasks {
		if n := acks[no]; n != 1 {
			problems = append(problems, fmt.Sprintf("the trace holds %d 202 answers for %s, want 1: the trace missed the answers, nothing was checked for it", n, no))
		}
	}
	return problems
}

// TestFsyncTraceChecker pins the trace rules on hand-written strace logs:
// the interleavings a real run may or may not produce.
func TestFsyncTraceChecker(t *testing.T) {
	const db = "/d/spool.db"
	w := func(tid, off, body string) string {
		return tid + " 1.0 pwrite64(5<" + db + ">, \"" + body + "\", 4096, " + off + ") = 4096"
	}
	dsync := thread1("fdatasync(5<" + db + ">) = 0")
	ack := func(tid, task string) string {
		return tid + " 1.0 write(9<TCP:[7]>, \"HTTP/1.1 202 Accepted\\r\\n\\r\\n{\\\"task_no\\\":\\\"" + task + "\\\"}\\n\", 80) = 80"
	}
	commitA := []string{w("1", "8192", "..A_v1.."), dsync, w("1", "4096", "meta")}
	cases := []struct {
		name  string
		lines []string
		want  string // substring of the only problem; "" for none
	}{
		{"synced", append(commitA, dsync, ack("2", "A_v1")), ""},
		{"next commit already writing", append(commitA, dsync, w("1", "12288", "..B_v1.."), ack("2", "A_v1")), ""},
		{"sync split across lines", append(commitA,
			"1 1.0 fdatasync(5<"+db+"> <unfinished ...>", "3 1.0 write(1<pipe:[1]>, \"x\", 1) = 1", "1 1.0 <... fdatasync resumed>) = 0",
			ack("2", "A_v1")), ""},
		{"no sync after meta", append(commitA, ack("2", "A_v1")), "not preceded by an fdatasync/fsync"},
		{"sync still running", append(commitA, "1 1.0 fdatasync(5<"+db+"> <unfinished ...>", ack("2", "A_v1"), "1 1.0 <... fdatasync resumed>) = 0"), "not preceded by an fdatasync/fsync"},
		{"sync failed", append(commitA, thread1("fdatasync(5<"+db+">) = -1 EIO (Input/output error)"), ack("2", "A_v1")), "not preceded by an fdatasync/fsync"},
		{"sync of another file", append(commitA, thread1("fdatasync(6</d/other.db>) = 0"), ack("2", "A_v1")), "not preceded by an fdatasync/fsync"},
		{"acked before written", []string{w("1", "12288", "..B_v1.."), dsync, ack("2", "A_v1"), commitA[0], dsync, commitA[2], dsync}, "before A_v1 was written"},
		{"acked before meta", []string{commitA[0], dsync, ack("2", "A_v1"), commitA[2], dsync}, "before the commit holding it wrote its meta page"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := parseStrace(strings.Join(c.lines, "\n"), db)
			got := checkFsyncBeforeAck(tr, []string{"A_v1"}, 4096)
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("want no problem, got %q", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("want one problem containing %q, got %q", c.want, got)
			}
		})
	}
	if got := checkFsyncBeforeAck(parseStrace(strings.Join(commitA, "\n"), db), []string{"A_v1"}, 4096); len(got) != 1 || !strings.Contains(got[0], "0 202 answers for A_v1") {
		t.Errorf("a trace without the 202 must fail, got %q", got)
	}
}

// thread1 prefixes a syscall line with thread id 1 and a timestamp.
func thread1(call string) string { return "1 1.0 " + call }
