package main

// The raw port (PROTOCOL.md §3 "Raw port") driven by real clients
// against the real binary: a CUPS raw queue printing with `lp -o raw`, and a
// POS whose agent is SIGKILLed in the middle of its job. The in-process
// cases (one-shot writes, kept-open connections, duplicates, truncation)
// are in agent/raw_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// rawToken is the api_token of the agents in this file.
const rawToken = "raw-port-test-token-0123456789"

// cupsTools finds the CUPS programs the CUPS test runs: the scheduler and
// the client tools. Without them the test skips, except in CI (CI=true),
// where a missing CUPS must fail rather than let the test pass by not
// running; .ci/run installs cups, cups-client and cups-bsd.
func cupsTools(t *testing.T) map[string]string {
	t.Helper()
	tools := map[string]string{}
	var missing []string
	for _, name := range []string{"cupsd", "lpadmin", "lp", "lpstat"} {
		p, err := exec.LookPath(name)
		if err != nil {
			// cupsd and lpadmin live in /usr/sbin, which a user's PATH
			// often lacks.
			if fi, serr := os.Stat(filepath.Join("/usr/sbin", name)); serr == nil && fi.Mode()&0o111 != 0 {
				p, err = filepath.Join("/usr/sbin", name), nil
			}
		}
		if err != nil {
			missing = append(missing, name)
			continue
		}
		tools[name] = p
	}
	if len(missing) == 0 {
		return tools
	}
	msg := fmt.Sprintf("no %s on PATH or in /usr/sbin (apt-get install cups cups-client cups-bsd; .ci/run installs them)", strings.Join(missing, ", "))
	// CI installs CUPS for the Linux run; the Windows build under Wine
	// (make test-windows, with CI set too) has none to find.
	if os.Getenv("CI") == "true" && runtime.GOOS == "linux" {
		t.Fatalf("CUPS raw-queue test cannot run in CI: %s", msg)
	}
	t.Skip("CUPS raw-queue test skipped: " + msg)
	return nil
}

// privateCUPS is a cupsd of the test's own: its configuration, spool, state
// and logs in a temporary folder and its only listener a Unix socket there,
// so the test never touches (nor depends on) the machine's CUPS.
type privateCUPS struct {
	tools  map[string]string
	dir    string
	sock   string
	cmd    *exec.Cmd
	logs   *lockedBuffer
	exited chan struct{}
}

// startCUPS starts a private cupsd in the foreground and waits until it
// answers; t.Cleanup stops it and removes its folder.
func startCUPS(t *testing.T, tools map[string]string) *privateCUPS {
	t.Helper()
	// Not t.TempDir: the folder must be reachable by the user cupsd runs
	// its backends as (lp when started as root), and the socket's path
	// must stay under the 108 bytes a Unix socket address holds.
	dir, err := os.MkdirTemp("", "pgcups-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"conf", "spool/temp", "log", "state", "cache"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// cupsd started as root drops to User for its backends and refuses
	// root; started as anyone else it runs them as that user.
	runUser, runGroup := "lp", "lp"
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			t.Fatalf("current user: %v", err)
		}
		runUser, runGroup = u.Username, u.Gid
		if g, err := user.LookupGroupId(u.Gid); err == nil {
			runGroup = g.Name
		}
	} else if _, err := user.Lookup("lp"); err != nil {
		t.Fatalf("cupsd runs its backends as user lp, which does not exist: %v", err)
	}
	c := &privateCUPS{tools: tools, dir: dir, sock: filepath.Join(dir, "cups.sock"), logs: &lockedBuffer{}, exited: make(chan struct{})}
	cupsdConf := fmt.Sprintf(`# private cupsd of printgate's rawport_cups_test.go
Listen %s
Browsing Off
WebInterface No
LogLevel debug
MaxLogSize 0
<Policy default>
<Limit All>
Order deny,allow
</Limit>
</Policy>
`, c.sock)
	filesConf := fmt.Sprintf(`User %s
Group %s
ServerRoot %[3]s/conf
StateDir %[3]s/state
CacheDir %[3]s/cache
RequestRoot %[3]s/spool
TempDir %[3]s/spool/temp
AccessLog %[3]s/log/access_log
ErrorLog %[3]s/log/error_log
PageLog %[3]s/log/page_log
Printcap %[3]s/state/printcap
ServerBin /usr/lib/cups
DataDir /usr/share/cups
`, runUser, runGroup, dir)
	if err := os.WriteFile(filepath.Join(dir, "cupsd.conf"), []byte(cupsdConf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cups-files.conf"), []byte(filesConf), 0o644); err != nil {
		t.Fatal(err)
	}
	// cupsd -t checks both files before the scheduler starts, so a
	// directive a new CUPS package refuses (cups 2.4.2-3+deb12u10 refused
	// the valueless Printcap line this file once wrote) fails here with
	// the directive named rather than as an exit at start.
	checkCtx, cancelCheck := context.WithTimeout(context.Background(), 30*time.Second)
	out, err := exec.CommandContext(checkCtx, tools["cupsd"], "-t", "-c", filepath.Join(dir, "cupsd.conf"), "-s", filepath.Join(dir, "cups-files.conf")).CombinedOutput()
	cancelCheck()
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("cupsd -t refused the private CUPS config (%v): %s\ncupsd said:\n%s", err, cupsRefusals(string(out), cupsdConf, filesConf), out)
	}
	c.cmd = exec.Command(tools["cupsd"], "-f", "-c", filepath.Join(dir, "cupsd.conf"), "-s", filepath.Join(dir, "cups-files.conf"))
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start cupsd: %v", err)
	}
	go func() { c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(15 * time.Second):
			c.cmd.Process.Kill()
			<-c.exited
			t.Errorf("private cupsd did not stop within 15s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("private cupsd output:\n%s\nerror_log (last 60 lines):\n%s", c.logs.String(), c.errorLog(60))
		}
		os.RemoveAll(dir)
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := c.tool("lpstat", "-r")
		if strings.Contains(out, "is running") {
			return c
		}
		select {
		case <-c.exited:
			t.Fatalf("private cupsd exited at start: %v: %s\n%s\n%s", c.cmd.ProcessState, cupsRefusals(c.logs.String()+"\n"+c.errorLog(40), cupsdConf, filesConf), c.logs.String(), c.errorLog(40))
		case <-time.After(50 * time.Millisecond): // another process: only its socket tells
		}
		if time.Now().After(deadline) {
			t.Fatalf("private cupsd did not answer in 20s (lpstat -r: %q)\n%s", out, c.errorLog(40))
		}
	}
}

// cupsConfigError matches the lines cupsd writes for a config line it
// refuses, in cupsd -t's output and in its error_log alike.
var cupsConfigError = regexp.MustCompile(`(Missing value for|Unknown directive|Bad|Unknown) ([A-Za-z][A-Za-z0-9]*)[^\n]*? on line (\d+) of ([^\s]+?)\.?(\s|$)`)

// cupsRefusals names each directive cupsd refused in out, with its line
// number and the line's text from whichever of the written files (cupsd.conf
// or cups-files.conf) it came from, so a failure says what to change rather
// than leaving the reader to dig through the error_log.
func cupsRefusals(out, cupsdConf, filesConf string) string {
	var named []string
	for _, m := range cupsConfigError.FindAllStringSubmatch(out, -1) {
		what, directive, lineNo, file := m[1], m[2], m[3], m[4]
		text := filesConf
		if strings.HasSuffix(file, "cupsd.conf") {
			text = cupsdConf
		}
		var n int
		fmt.Sscan(lineNo, &n)
		lines := strings.Split(text, "\n")
		line := "?"
		if n >= 1 && n <= len(lines) {
			line = strings.TrimSpace(lines[n-1])
		}
		named = append(named, fmt.Sprintf("directive %s refused (%s) on line %s of %s: %q", directive, strings.ToLower(what), lineNo, filepath.Base(file), line))
	}
	if len(named) == 0 {
		return "cupsd named no directive; see its output"
	}
	return strings.Join(named, "; ")
}

// tool runs a CUPS client tool against the private cupsd, bounded, and
// returns its combined output.
func (c *privateCUPS) tool(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tools[name], args...)
	// CUPS_SERVER names the scheduler for every client tool; an absolute
	// path is a Unix socket.
	cmd.Env = append(os.Environ(), "CUPS_SERVER="+c.sock)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// errorLog is the last n lines of the private cupsd's error_log.
func (c *privateCUPS) errorLog(n int) string {
	b, err := os.ReadFile(filepath.Join(c.dir, "log", "error_log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// jobs lists the queue's jobs CUPS shows under which ("completed" or
// "not-completed"), by id.
func (c *privateCUPS) jobs(t *testing.T, queue, which string) []string {
	t.Helper()
	out, err := c.tool("lpstat", "-W", which, "-o", queue)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], queue+"-") {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// rawAgent writes a config with one printer, name, printing to the
// emulator p and taking raw jobs on its own loopback port, and returns the
// config's path, the API base and the raw port's address.
func rawAgent(t *testing.T, dir, name string, p *printertest.Printer) (config, base, rawAddr string) {
	t.Helper()
	port := freePort(t)
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	rawAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[log]\nlevel = \"info\"\n"+
		"[[printers]]\nname = %q\nurl = \"tcp://%s\"\nraw_listen = %q\n", dir, port, rawToken, name, p.Addr(), rawAddr)
	config = filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, base, rawAddr
}

// rawTask is the part of a task the raw-port tests check.
type rawTask struct {
	TaskNo    string `json:"task_no"`
	Printer   string `json:"printer"`
	State     string `json:"state"`
	Origin    string `json:"origin"`
	Truncated bool   `json:"truncated"`
}

// apiGet reads an API route with the token; anything but 200 fails.
func apiGet(t *testing.T, base, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+rawToken)
	// DefaultClient's transport checks the answer against
	// docs/openapi.yaml (TestMain).
	client := &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultClient.Transport}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: HTTP %d %v: %s", path, resp.StatusCode, err, b)
	}
	return b
}

// listTasks is every task the agent lists, in accept order (one page of up
// to 1000 is all these tests make).
func listTasks(t *testing.T, base string) []rawTask {
	t.Helper()
	var page struct {
		Tasks []rawTask `json:"tasks"`
		Next  *uint64   `json:"next"`
	}
	if err := json.Unmarshal(apiGet(t, base, "/api/v1/tasks?limit=1000"), &page); err != nil {
		t.Fatalf("task list: %v", err)
	}
	if page.Next != nil {
		t.Fatalf("more than 1000 tasks listed")
	}
	return page.Tasks
}

// waitTasksPrinted waits, at most a minute, until the agent lists n tasks
// and all of them PRINTED, and returns them.
func waitTasksPrinted(t *testing.T, base string, n int) []rawTask {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		tasks := listTasks(t, base)
		done := len(tasks) == n
		for _, tk := range tasks {
			done = done && tk.State == "PRINTED"
		}
		if done {
			return tasks
		}
		if len(tasks) > n || time.Now().After(deadline) {
			t.Fatalf("want %d tasks, all PRINTED within a minute; the agent lists %+v", n, tasks)
		}
		time.Sleep(50 * time.Millisecond) // another process: only its API tells
	}
}

// rawTicket is one distinct ESC/POS job: initialise, three lines that all
// carry tag, feed and partial cut.
func rawTicket(tag string) []byte {
	b := []byte{0x1b, '@'}
	b = fmt.Appendf(b, "RAW TICKET %s\nITEM %s noodles x1\nEND %s\n", tag, tag, tag)
	return append(b, 0x1d, 'V', 'B', 0)
}

// paperWithTag counts the tickets (cut or still pending) whose text holds
// tag.
func paperWithTag(p *printertest.Printer, tag string) int {
	n := 0
	all := p.Tickets()
	if pend := p.Pending(); len(pend.Lines) > 0 {
		all = append(all, pend)
	}
	for _, tk := range all {
		if strings.Contains(tk.Text(), tag) {
			n++
		}
	}
	return n
}

// TestRawPortCUPSQueue is the raw port's proof with a real CUPS: a raw queue
// socket://127.0.0.1:RAWPORT on a private cupsd, pointed at the real
// binary's raw port, prints N distinct tickets with `lp -o raw`; each comes
// out once, whole, in order, at the emulated printer behind the agent, as a
// task of origin raw whose stored bytes are that ticket's.
func TestRawPortCUPSQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary and a private cupsd")
	}
	tools := cupsTools(t)
	bin := buildPrintgate(t)
	dir := t.TempDir()
	p := printertest.New(printertest.Options{Name: "counter", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	config, base, rawAddr := rawAgent(t, dir, "counter", p)
	proc := startAgent(t, bin, config, base)
	defer proc.kill(t)
	defer func() {
		if t.Failed() {
			t.Logf("agent log:\n%s", proc.logs.String())
		}
	}()

	cups := startCUPS(t, tools)
	const queue = "pgraw"
	// No model: a raw queue, which CUPS 2.4 still makes without the
	// deprecated -m raw.
	if out, err := cups.tool("lpadmin", "-p", queue, "-E", "-v", "socket://"+rawAddr, "-o", "printer-is-shared=false"); err != nil {
		t.Fatalf("create the raw queue: %v (%s)", err, out)
	}

	const n = 5
	tags := make([]string, n)
	files := make([]string, n)
	for i := range n {
		tags[i] = fmt.Sprintf("CUPS%02d", i+1)
		files[i] = filepath.Join(cups.dir, tags[i]+".prn")
		// 0644 in a 0755 folder: cupsd reads the file lp names as root,
		// but a non-root lp must read it too.
		if err := os.WriteFile(files[i], rawTicket(tags[i]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if out, err := cups.tool("lp", "-d", queue, "-o", "raw", "-t", tags[i], files[i]); err != nil || !strings.Contains(out, "request id is") {
			t.Fatalf("lp %s: %v (%s)", tags[i], err, out)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.WaitTickets(ctx, n); err != nil {
		out, _ := cups.tool("lpstat", "-l", "-p", queue)
		t.Fatalf("the emulator did not get %d tickets: %v\nqueue: %s\nCUPS log:\n%s", n, err, out, cups.errorLog(40))
	}
	// CUPS finishes a job once the agent has stored it and closed; wait for
	// all to be done, so that a retry CUPS might still make is counted.
	deadline := time.Now().Add(time.Minute)
	for len(cups.jobs(t, queue, "not-completed")) > 0 {
		if time.Now().After(deadline) {
			out, _ := cups.tool("lpstat", "-W", "all", "-l", "-o", queue)
			t.Fatalf("CUPS jobs still not completed after a minute:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond) // another process: only lpstat tells
	}
	if done := cups.jobs(t, queue, "completed"); len(done) != n {
		t.Errorf("CUPS completed %d jobs %v, want %d", len(done), done, n)
	}
	tasks := waitTasksPrinted(t, base, n)

	// Paper: exactly n tickets, the i-th holding tags[i] and no other tag.
	tickets := p.Tickets()
	if len(tickets) != n {
		t.Errorf("%d tickets on paper, want %d", len(tickets), n)
	}
	for i, tk := range tickets {
		var held []string
		for _, tag := range tags {
			if c := strings.Count(tk.Text(), "RAW TICKET "+tag); c > 0 {
				held = append(held, fmt.Sprintf("%s×%d", tag, c))
			}
		}
		if i >= n || len(held) != 1 || held[0] != tags[i]+"×1" || !strings.Contains(tk.Text(), "END "+tags[i]) {
			t.Errorf("ticket %d holds %v, want %s once and whole:\n%s", i+1, held, tags[min(i, n-1)], tk.Text())
		}
		if strings.Contains(tk.Text(), "POSSIBLE DUPLICATE") || strings.Contains(tk.Text(), "INCOMPLETE") {
			t.Errorf("ticket %d is marked:\n%s", i+1, tk.Text())
		}
	}
	if pend := p.Pending(); len(pend.Lines) > 0 {
		t.Errorf("text printed but never cut: %q", pend.Lines)
	}

	// Tasks: n of origin raw, named as PROTOCOL.md says, in accept order,
	// the i-th storing exactly the bytes lp sent for tags[i].
	name := regexp.MustCompile(`^RAW_counter_\d{8}-\d{6}_\d+-[0-9a-f]{8}$`)
	for i, tk := range tasks {
		if tk.Origin != "raw" || tk.Printer != "counter" || tk.Truncated || !name.MatchString(tk.TaskNo) {
			t.Errorf("task %d: %+v, want origin raw on counter, not truncated, task_no RAW_counter_<yyyymmdd-hhmmss>_<n>", i+1, tk)
		}
		if got := apiGet(t, base, "/api/v1/tasks/"+tk.TaskNo+"/payload"); !bytes.Equal(got, rawTicket(tags[i])) {
			t.Errorf("task %d (%s) stores %q, want %s's bytes %q", i+1, tk.TaskNo, got, tags[i], rawTicket(tags[i]))
		}
	}
}

// TestRawPortKilledMidJob: a POS has written half a job (no cut) to the real
// binary's raw port when the agent is SIGKILLed. The POS must see its
// connection end in an error, not a clean finish it could take for
// success, and nothing of the half job may print after the agent restarts
// on the same data_dir: the job was never stored, so the POS still owns it.
// A whole job sent after the restart prints, which shows the agent was
// printing while the half job stayed off paper.
func TestRawPortKilledMidJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds, kills and restarts the real binary")
	}
	bin := buildPrintgate(t)
	dir := t.TempDir()
	p := printertest.New(printertest.Options{Name: "counter", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	config, base, rawAddr := rawAgent(t, dir, "counter", p)
	proc := startAgent(t, bin, config, base)
	firstLog := proc.logs

	conn, err := net.DialTimeout("tcp", rawAddr, 5*time.Second)
	if err != nil {
		proc.kill(t)
		t.Fatalf("dial the raw port: %v", err)
	}
	defer conn.Close()
	half := rawTicket("HALFJOB")
	half = half[:bytes.Index(half, []byte("END"))] // header and item, no end line, no cut
	// DLE EOT 1 after the half job: the port answers status queries in
	// stream order, so its answer proves the agent has read the half job.
	if _, err := conn.Write(append(half, 0x10, 0x04, 0x01)); err != nil {
		proc.kill(t)
		t.Fatalf("write half a job: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	status := make([]byte, 1)
	if _, err := io.ReadFull(conn, status); err != nil {
		proc.kill(t)
		t.Fatalf("no answer to DLE EOT 1 after half a job: %v\n%s", err, firstLog.String())
	}
	proc.kill(t)

	// The POS waits for the job's end: it must get an error, not silence
	// and not a clean end after a whole job.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, rerr := conn.Read(make([]byte, 64))
	var ne net.Error
	switch {
	case rerr == nil:
		t.Fatalf("read after the agent was killed returned data, want EOF or a reset")
	case errors.As(rerr, &ne) && ne.Timeout():
		t.Fatalf("read after the agent was killed timed out: the POS would not learn its job failed")
	case !errors.Is(rerr, syscall.ECONNRESET):
		// An orderly end (EOF) is what a stored job gets; a killed
		// agent's sockets must reset (the port sets SO_LINGER 0 until
		// a job is stored).
		t.Fatalf("read after the agent was killed: %v, want a reset", rerr)
	}
	// Writing the rest fails too (the kernel answers the dead socket's
	// peer with a reset, then EPIPE), within a few writes.
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	var werr error
	for i := 0; i < 50 && werr == nil; i++ {
		_, werr = conn.Write([]byte("ITEM HALFJOB more\n"))
		if werr == nil {
			time.Sleep(20 * time.Millisecond) // give the peer's reset time to come back
		}
	}
	if werr == nil || !(errors.Is(werr, syscall.ECONNRESET) || errors.Is(werr, syscall.EPIPE)) {
		t.Errorf("writing the rest of the job after the kill: %v, want a reset or broken pipe", werr)
	}
	t.Logf("client saw: read %v; write %v", rerr, werr)

	proc = startAgent(t, bin, config, base)
	defer proc.kill(t)
	defer func() {
		if t.Failed() {
			t.Logf("first run:\n%s\nsecond run:\n%s", firstLog.String(), proc.logs.String())
		}
	}()
	// A whole job after the restart, sent as CUPS does: write, close the
	// sending side, wait for the agent to close once it has stored it.
	ctrl, err := net.DialTimeout("tcp", rawAddr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial the raw port after the restart: %v", err)
	}
	defer ctrl.Close()
	ctrl.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := ctrl.Write(rawTicket("AFTERKILL")); err != nil {
		t.Fatalf("write the job after the restart: %v", err)
	}
	ctrl.(*net.TCPConn).CloseWrite()
	if _, err := io.Copy(io.Discard, ctrl); err != nil {
		t.Fatalf("the agent did not close cleanly after storing the job: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.WaitTickets(ctx, 1); err != nil {
		t.Fatalf("the job sent after the restart did not print: %v", err)
	}
	tasks := waitTasksPrinted(t, base, 1)
	if tk := tasks[0]; tk.Origin != "raw" || tk.Truncated {
		t.Errorf("the only task is %+v, want the whole raw job sent after the restart", tk)
	}
	if got := apiGet(t, base, "/api/v1/tasks/"+tasks[0].TaskNo+"/payload"); !bytes.Equal(got, rawTicket("AFTERKILL")) {
		t.Errorf("the only task stores %q, want the job sent after the restart", got)
	}
	if n := paperWithTag(p, "HALFJOB"); n != 0 {
		t.Errorf("%d tickets hold text of the half job cut off by the kill: %+v", n, p.Tickets())
	}
	if n := paperWithTag(p, "AFTERKILL"); n != 1 || len(p.Tickets()) != 1 {
		t.Errorf("want one ticket, the job sent after the restart; paper: %+v", p.Tickets())
	}
}

// TestCUPSRefusalsNamesDirective holds the failure message of a refused
// private CUPS config to naming the directive, its line and the line's
// text, from the words cups 2.4.2-3+deb12u10 wrote for the valueless
// Printcap line (a security update began to refuse it, and the suite
// failed with only "exited at start") and for an unknown directive.
func TestCUPSRefusalsNamesDirective(t *testing.T) {
	files := "User lp\nGroup lp\nPrintcap\nServerBin /usr/lib/cups\n"
	cupsd := "Listen /tmp/x.sock\nFooBar 1\n"
	out := "\"/tmp/pgcups-1/cups-files.conf\" contains errors.\n" +
		"E [01/Dec/2026:20:26:20 +0000] Missing value for Printcap on line 3 of /tmp/pgcups-1/cups-files.conf.\n" +
		"Unknown directive FooBar on line 2 of /tmp/pgcups-1/cupsd.conf.\n"
	got := cupsRefusals(out, cupsd, files)
	for _, want := range []string{
		`directive Printcap refused (missing value for) on line 3 of cups-files.conf: "Printcap"`,
		`directive FooBar refused (unknown directive) on line 2 of cupsd.conf: "FooBar 1"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cupsRefusals = %q; want it to contain %q", got, want)
		}
	}
	if got := cupsRefusals("cupsd: something else went wrong\n", cupsd, files); !strings.Contains(got, "named no directive") {
		t.Errorf("cupsRefusals of an unrelated error = %q; want it to say no directive was named", got)
	}
}
