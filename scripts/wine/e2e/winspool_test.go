package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// spoolQueue is the CUPS queue, and so the Windows printer, of TestWinspool.
const spoolQueue = "pgwine"

// TestWinspool ensures the Windows spooler transport (winspool://) works:
// Wine shows the queues of a CUPS scheduler as Windows printers, so a
// private cupsd with a raw queue socket:// to a loopback printer is a
// Windows printer queue here. The checks run in order on one cupsd and one
// agent: discovery lists the queue; a raw ticket through winspool:// comes
// out at the printer byte for byte as one job, with the task PRINTED on the
// spooler's word (confirmation "delivered", the most a spooler can give)
// and no other job in the queue (status polls must not spool queries);
// test-print prints. Each check skips, saying why, where CUPS is not
// installed.
//
// Wine's default port for a CUPS queue (CUPS:NAME) sends the job with the
// queue's own attributes as options, which crashed Debian's cupsd
// (2.4.2-3+deb12u10) every time; the port is set to LPR:NAME (registry
// value Port of the printer), through which Wine pipes the job to lpr.
func TestWinspool(t *testing.T) {
	needWine(t)
	tools, missing := cupsMissing()
	var cups *privateCUPS
	var sink *rawSink
	if missing == "" {
		sink = newRawSink(t)
		cups = startCUPS(t, tools)
		// No model: a raw queue, which CUPS 2.4 still makes without the
		// deprecated -m raw.
		if out, err := cups.tool("lpadmin", "-p", spoolQueue, "-E", "-v", "socket://"+sink.addr(), "-o", "printer-is-shared=false"); err != nil {
			t.Fatalf("create the raw CUPS queue: %v (%s)", err, out)
		}
	}
	need := func(t *testing.T) {
		t.Helper()
		if missing != "" {
			t.Skip("needs CUPS, whose queues Wine shows as Windows printers: " + missing)
		}
	}
	dir := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const token = "wine-winspool-token-0123456789abcdef"
	config := filepath.Join(dir, "printgate.toml")
	var agent *agentRun
	owner := t
	var listed bool

	t.Run("spooler-discovery", func(t *testing.T) {
		need(t)
		// The first Wine process that loads winspool.drv with this cupsd
		// in reach adds the queue to the prefix's printers.
		out := mustPGEnv(t, cups.Env(), time.Minute, "printers", "--no-probe", "--json")
		q := discovered(t, out, "winspool://"+spoolQueue)
		// CUPS:NAME is Wine's default; LPR:NAME is left from an earlier
		// run in a kept prefix.
		if q.Device != "CUPS:"+spoolQueue && q.Device != "LPR:"+spoolQueue {
			t.Errorf("the queue's port is %q, want Wine's default CUPS:%s", q.Device, spoolQueue)
		}
		regKey := `HKLM\System\CurrentControlSet\Control\Print\Printers\` + spoolQueue
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if b, err := exec.CommandContext(ctx, "wine", "reg", "add", regKey, "/v", "Port", "/t", "REG_SZ", "/d", "LPR:"+spoolQueue, "/f").CombinedOutput(); err != nil {
			t.Fatalf("wine reg add %s Port: %v: %s", regKey, err, b)
		}
		out = mustPGEnv(t, cups.Env(), time.Minute, "printers", "--no-probe", "--json")
		if q := discovered(t, out, "winspool://"+spoolQueue); q.Device != "LPR:"+spoolQueue {
			t.Fatalf("after setting the port, the queue's port is %q, want LPR:%s", q.Device, spoolQueue)
		}
		listed = true
	})
	t.Run("spooler-print", func(t *testing.T) {
		need(t)
		if !listed {
			t.Fatal("the queue is not set up: the spooler-discovery check failed")
		}
		// The default profile (epson-80) promises answers the spooler
		// cannot carry: the printer must still be READY, not ERROR.
		cfg := fmt.Sprintf("data_dir = '%s'\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n\n[[printers]]\nname = \"spool\"\nurl = \"winspool://%s\"\n",
			winPath(filepath.Join(dir, "data")), port, token, spoolQueue)
		if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		agent = startAgentEnv(t, owner, config, base, cups.Env())
		ticket := []byte("\x1b@WINSPOOL RAW TICKET\n\xc4\xe3\xba\xc3 0123456789\n\x1dVB\x00")
		submitPayload(t, base, token, "WINE-0101_SPOOL_v1", "spool", ticket)
		waitState(t, base, token, "WINE-0101_SPOOL_v1", "PRINTED", 30*time.Second)
		if c := taskField(t, base, token, "WINE-0101_SPOOL_v1", "confirmation"); c != "delivered" {
			t.Errorf("the spooled task's confirmation is %q, want delivered: the spooler's word is all it has", c)
		}
		jobs := sink.waitJobs(t, 1, 30*time.Second)
		// Every raw payload ends with ESC = 1 (agent/render.go), on every
		// transport.
		want := append(append([]byte{}, ticket...), 0x1b, '=', 0x01)
		if !bytes.Equal(jobs[0], want) {
			t.Fatalf("the printer got %q, want exactly the ticket and ESC = 1, %q", jobs[0], want)
		}
		// Status polls go on while the agent runs; none may reach the
		// queue as a job of its own.
		time.Sleep(3 * time.Second)
		if got := sink.received(); len(got) != 1 {
			t.Errorf("the printer got %d jobs, want only the ticket: %q", len(got), got)
		}
		_, body, _ := get(base+"/api/v1/printers", token)
		if !strings.Contains(body, `"state":"READY"`) {
			t.Errorf("/api/v1/printers: %s, want the spooler printer READY", body)
		}
		if s := agent.logs.String(); strings.Contains(s, "completion proof weakened") {
			t.Errorf("the agent warned of a weakened proof, which a spooler queue never had:\n%s", s)
		}
	})
	t.Run("spooler-test-print", func(t *testing.T) {
		need(t)
		if agent == nil {
			t.Fatal("no agent running: the spooler-print check failed")
		}
		n := len(sink.received())
		out, code := pgEnv(t, cups.Env(), time.Minute, "test-print", "spool", "--config", winPath(config), "--wait", "30s")
		if code != 0 {
			t.Fatalf("test-print: exit %d, want 0:\n%s", code, out)
		}
		jobs := sink.waitJobs(t, n+1, 30*time.Second)
		tickets, _ := printertest.Parse(jobs[n], false)
		if len(jobs) != n+1 || len(tickets) != 1 {
			t.Fatalf("test-print gave %d jobs, the last with %d tickets, want one job of one ticket:\n%s", len(jobs)-n, len(tickets), out)
		}
		agent.interrupt(t)
	})
}

// mustPGEnv is pgEnv that also wants exit code 0.
func mustPGEnv(t *testing.T, env []string, limit time.Duration, args ...string) string {
	t.Helper()
	out, code := pgEnv(t, env, limit, args...)
	if code != 0 {
		t.Fatalf("printgate %s: exit %d, want 0:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// foundJSON is one discovered entry of printgate printers --json.
type foundJSON struct {
	Kind, URL, Device, Model string
}

// discovered finds url among the discovered entries of printers --json
// output and wants it of kind winspool.
func discovered(t *testing.T, out, url string) foundJSON {
	t.Helper()
	// Wine may print its own lines before the JSON.
	i := strings.Index(out, "{")
	var rep struct {
		Discovered []foundJSON `json:"discovered"`
		Warnings   []string    `json:"warnings"`
	}
	if i < 0 || json.NewDecoder(strings.NewReader(out[i:])).Decode(&rep) != nil {
		t.Fatalf("printers --json printed no report:\n%s", out)
	}
	if len(rep.Warnings) > 0 {
		t.Errorf("printers warned: %q", rep.Warnings)
	}
	for _, f := range rep.Discovered {
		if f.URL == url {
			if f.Kind != "winspool" {
				t.Errorf("%s is of kind %q, want winspool", url, f.Kind)
			}
			return f
		}
	}
	t.Fatalf("printers does not list the spooler queue %s:\n%s", url, out)
	return foundJSON{}
}

// submitPayload posts a raw ESC/POS task for printer and wants 202.
func submitPayload(t *testing.T, base, token, taskNo, printer string, payload []byte) {
	t.Helper()
	body := fmt.Sprintf(`{"task_no":%q,"printer":%q,"payload":%q}`, taskNo, printer, base64.StdEncoding.EncodeToString(payload))
	req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("submit %s: %v", taskNo, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 202 {
		t.Fatalf("submit %s: HTTP %d, want 202: %s", taskNo, resp.StatusCode, b)
	}
}

// taskField is one string field of the task as the agent reports it.
func taskField(t *testing.T, base, token, taskNo, field string) string {
	t.Helper()
	code, body, err := get(base+"/api/v1/tasks/"+taskNo, token)
	if err != nil || code != 200 {
		t.Fatalf("get task %s: HTTP %d %v: %s", taskNo, code, err, body)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("get task %s: %v: %s", taskNo, err, body)
	}
	s, _ := v[field].(string)
	return s
}
