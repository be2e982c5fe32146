package hostile

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"printgate/internal/apispec"
	"printgate/internal/proctest"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// bin is the printgate binary TestMain builds once for every test.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "printgate-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile: temp dir:", err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "printgate")
	build := exec.Command("go", "build", "-o", bin, "printgate/cmd/printgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "hostile: go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	// Answers read through http.DefaultClient are held to
	// docs/openapi.yaml too (Agent.do checks its own).
	v, err := apispec.CheckDefaultClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := v.Wrap(m).Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Setup shapes one agent run. The zero value is one emulated printer "p0",
// no raw port, no cloud, the listener on 127.0.0.1.
type Setup struct {
	// Top is TOML placed at the top of the config, before any table.
	Top string
	// Tables is TOML placed after the top keys and before [[printers]]
	// ([spool], [cloud], [defaults] ...).
	Tables string
	// Printer is TOML placed inside the first printer's table.
	Printer string
	// Raw gives the first printer a raw port on a free loopback port.
	Raw bool
	// Listen overrides the listener address (default 127.0.0.1:<free>).
	Listen string
	// NoWait skips the /healthz wait (for a config the agent must refuse).
	NoWait bool
	// TokenFile puts the API token in api-token.txt in the data dir, mode
	// 0644 as `printgate token > api-token.txt` leaves it, and names it with
	// api_token_file instead of writing api_token inline.
	TokenFile bool
	// Before, when set, runs on the data dir after the config is written
	// and before the agent starts (to put a device token there, or widen a
	// mode).
	Before func(dir string)
}

// Agent is one run of the real binary.
type Agent struct {
	// Base is the http:// base URL of the listener.
	Base string
	// Token is the API token in the config.
	Token string
	// Dir is the data dir; Config the config file's path.
	Dir, Config string
	// RawAddr is the raw port's address when Setup.Raw.
	RawAddr string
	// Printer is the emulated printer p0.
	Printer *printertest.Printer

	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
}

const testToken = "hostile-suite-token-0123456789abcdef"

// start writes a config from s and runs `printgate run` on it, waiting until
// /healthz answers. The agent is stopped when the test ends.
func start(t *testing.T, s Setup) *Agent {
	t.Helper()
	dir := t.TempDir()
	p := printertest.New(printertest.Options{Name: "p0", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	listen := s.Listen
	if listen == "" {
		listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	a := &Agent{Token: testToken, Dir: dir, Printer: p, logs: &lockedBuffer{}, done: make(chan struct{})}
	host, port, _ := net.SplitHostPort(listen)
	if host == "" || host == "0.0.0.0" {
		host = "127.0.0.1"
	} else if host == "::" {
		host = "::1"
	}
	a.Base = "http://" + net.JoinHostPort(host, port)
	var cfg strings.Builder
	tokenLine := fmt.Sprintf("api_token = %q", testToken)
	if s.TokenFile {
		tf := filepath.Join(dir, "api-token.txt")
		if err := os.WriteFile(tf, []byte(testToken+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(tf, 0o644); err != nil { // whatever the umask
			t.Fatal(err)
		}
		tokenLine = fmt.Sprintf("api_token_file = %q", tf)
	}
	fmt.Fprintf(&cfg, "data_dir = %q\nlisten = %q\n%s\n%s\n", dir, listen, tokenLine, s.Top)
	cfg.WriteString("[log]\nlevel = \"debug\"\n")
	cfg.WriteString(s.Tables)
	fmt.Fprintf(&cfg, "\n[[printers]]\nname = \"p0\"\nurl = \"tcp://%s\"\n", p.Addr())
	if s.Raw {
		a.RawAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		fmt.Fprintf(&cfg, "raw_listen = %q\n", a.RawAddr)
	}
	cfg.WriteString(s.Printer)
	a.Config = filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(a.Config, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.Before != nil {
		s.Before(dir)
	}
	a.cmd = exec.Command(bin, "run", "--config", a.Config)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() { a.stop(t) })
	if s.NoWait {
		return a
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(a.Base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return a
			}
		}
		select {
		case <-a.done:
			t.Fatalf("agent exited at start: %v\n%s", a.cmd.ProcessState, a.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not come up: %v\n%s", err, a.logs.String())
		}
		// Another process: nothing to wait on but its port.
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the agent with SIGTERM (SIGKILL after 10 s) and logs its output
// when the test failed.
func (a *Agent) stop(t *testing.T) {
	select {
	case <-a.done:
	default:
		a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.done:
		case <-time.After(10 * time.Second):
			a.cmd.Process.Kill()
			<-a.done
		}
	}
	if t.Failed() {
		t.Logf("agent output:\n%s", a.logs.String())
	}
}

// Pid is the agent's process id.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Logs is everything the agent wrote to stdout and stderr so far.
func (a *Agent) Logs() string { return a.logs.String() }

// Exited waits up to d for the agent to exit and reports whether it did.
func (a *Agent) Exited(d time.Duration) bool {
	select {
	case <-a.done:
		return true
	case <-time.After(d):
		return false
	}
}

// do sends one request to the agent with the given headers and returns the
// status, the body and the response headers. A transport error fails the
// test.
func (a *Agent) do(t *testing.T, method, path string, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.Base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 15 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	// Whatever the attack, the API answers only as docs/openapi.yaml
	// describes: a refusal too has a documented status and code.
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Check(req, resp.StatusCode, resp.Header, b); err != nil {
		t.Error(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// submit posts one ticket with the right token and returns the status.
func (a *Agent) submit(t *testing.T, taskNo string) int {
	t.Helper()
	body := fmt.Sprintf(`{"task_no":%q,"printer":"p0","document":{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}}`, taskNo, taskNo)
	code, _, _ := a.do(t, "POST", "/api/v1/tasks", body, map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"})
	return code
}

func freePort(t *testing.T) int { return proctest.FreePort(t) }

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer = proctest.Buffer

// contextWithTimeout is a context bounded by secs seconds and by the test.
func contextWithTimeout(t *testing.T, secs int) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), time.Duration(secs)*time.Second)
}
