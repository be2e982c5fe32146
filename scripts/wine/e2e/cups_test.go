package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cupsMissing says which CUPS programs the spooler checks need are not on
// this machine ("" when all are): the scheduler, lpadmin to make the queue,
// lpstat to see it answer, and lpr, through which Wine's LPR: port hands
// over each job.
func cupsMissing() (tools map[string]string, missing string) {
	tools = map[string]string{}
	var lack []string
	for _, name := range []string{"cupsd", "lpadmin", "lpstat", "lpr"} {
		p, err := exec.LookPath(name)
		if err != nil {
			// cupsd and lpadmin live in /usr/sbin, which a user's PATH
			// often lacks.
			if fi, serr := os.Stat(filepath.Join("/usr/sbin", name)); serr == nil && fi.Mode()&0o111 != 0 {
				p, err = filepath.Join("/usr/sbin", name), nil
			}
		}
		if err != nil {
			lack = append(lack, name)
			continue
		}
		tools[name] = p
	}
	if len(lack) > 0 {
		return nil, fmt.Sprintf("no %s on PATH or in /usr/sbin (apt-get install cups cups-client cups-bsd)", strings.Join(lack, ", "))
	}
	return tools, ""
}

// privateCUPS is a cupsd of the test's own, as cmd/printgate's
// rawport_cups_test.go runs one: its configuration, spool, state and logs
// in a temporary folder and its only listener a Unix socket there, so the
// machine's CUPS is neither touched nor needed. Wine's CUPS client and lpr
// find it through CUPS_SERVER (Env).
type privateCUPS struct {
	tools  map[string]string
	dir    string
	sock   string
	cmd    *exec.Cmd
	logs   *lockedBuffer
	exited chan struct{}
}

// Env is what a process needs in its environment to use this cupsd.
func (c *privateCUPS) Env() []string { return []string{"CUPS_SERVER=" + c.sock} }

// startCUPS starts the private cupsd in the foreground and waits (at most
// 20 s) until it answers; t.Cleanup stops it and removes its folder.
func startCUPS(t *testing.T, tools map[string]string) *privateCUPS {
	t.Helper()
	// Not t.TempDir: the folder must be reachable by the user cupsd runs
	// its backends as (lp when started as root), and the socket's path
	// must stay under the 108 bytes a Unix socket address holds.
	dir, err := os.MkdirTemp("", "pgwinecups-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
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
	}
	c := &privateCUPS{tools: tools, dir: dir, sock: filepath.Join(dir, "cups.sock"), logs: &lockedBuffer{}, exited: make(chan struct{})}
	conf := fmt.Sprintf("Listen %s\nBrowsing Off\nWebInterface No\nLogLevel debug\nMaxLogSize 0\n"+
		"<Policy default>\n<Limit All>\nOrder deny,allow\n</Limit>\n</Policy>\n", c.sock)
	files := fmt.Sprintf("User %s\nGroup %s\nServerRoot %[3]s/conf\nStateDir %[3]s/state\nCacheDir %[3]s/cache\n"+
		"RequestRoot %[3]s/spool\nTempDir %[3]s/spool/temp\nAccessLog %[3]s/log/access_log\nErrorLog %[3]s/log/error_log\n"+
		"PageLog %[3]s/log/page_log\nPrintcap %[3]s/state/printcap\nServerBin /usr/lib/cups\nDataDir /usr/share/cups\n", runUser, runGroup, dir)
	if err := os.WriteFile(filepath.Join(dir, "cupsd.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cups-files.conf"), []byte(files), 0o644); err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(tools["cupsd"], "-f", "-c", filepath.Join(dir, "cupsd.conf"), "-s", filepath.Join(dir, "cups-files.conf"))
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
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
			t.Errorf("private cupsd did not stop within 15 s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("private cupsd output:\n%s\nerror_log (last 40 lines):\n%s", c.logs.String(), c.errorLog(40))
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := c.tool("lpstat", "-r")
		if strings.Contains(out, "is running") {
			return c
		}
		select {
		case <-c.exited:
			t.Fatalf("private cupsd exited at start: %v\n%s\n%s", c.cmd.ProcessState, c.logs.String(), c.errorLog(40))
		case <-time.After(50 * time.Millisecond): // another process: only its socket tells
		}
		if time.Now().After(deadline) {
			t.Fatalf("private cupsd did not answer in 20 s (lpstat -r: %q)\n%s", out, c.errorLog(40))
		}
	}
}

// tool runs a CUPS client tool against the private cupsd, bounded, and
// returns its combined output.
func (c *privateCUPS) tool(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tools[name], args...)
	cmd.Env = append(os.Environ(), c.Env()...)
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

// rawSink is the printer behind the CUPS queue: it keeps the exact bytes of
// each connection CUPS's socket backend makes (one per job), so a check
// can hold a spooled ticket to the bytes the agent sent. (The emulator of
// drivers/printertest decodes what it gets into paper and keeps no stream;
// printertest.Parse reads these bytes the same way.)
type rawSink struct {
	ln   net.Listener
	mu   sync.Mutex
	jobs [][]byte
	wg   sync.WaitGroup
}

func newRawSink(t *testing.T) *rawSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawSink{ln: ln}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawSink) addr() string { return s.ln.Addr().String() }

func (s *rawSink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			// The backend sends the job and then half-closes; a job
			// that never ends is cut off rather than holding the test.
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			var job []byte
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				job = append(job, buf[:n]...)
				if err != nil {
					break
				}
			}
			if len(job) > 0 {
				s.mu.Lock()
				s.jobs = append(s.jobs, job)
				s.mu.Unlock()
			}
		}()
	}
}

// received is every job the sink has got so far, in arrival order.
func (s *rawSink) received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.jobs...)
}

// waitJobs waits up to limit for the sink to hold n jobs and returns them.
func (s *rawSink) waitJobs(t *testing.T, n int, limit time.Duration) [][]byte {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if got := s.received(); len(got) >= n || time.Now().After(deadline) {
			if len(got) < n {
				t.Fatalf("the printer behind the CUPS queue got %d jobs within %v, want %d", len(got), limit, n)
			}
			return got
		}
		time.Sleep(50 * time.Millisecond) // CUPS's backend, another process: only its bytes tell
	}
}
