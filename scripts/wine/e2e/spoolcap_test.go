package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestSpoolAtCap ensures the spool keeps its promise at its cap on
// Windows, where bbolt grows the file by whole mappings (powers of two)
// rather than by its allocation step, so the spool stops intake at a
// different size than on Linux (docs/PROTOCOL.md §2 "Room at the cap").
// The printer is out of paper while the LAN API takes tickets of 64 KiB to
// 1 MiB until it answers 507 storage_full; /healthz must then say the
// spool refuses work, intake alone keep the file within the cap and fill
// at least half of it, the cap hold across a restart at the cap, and once the paper is back every
// ticket taken print exactly once, with no log line saying bbolt reached
// its maximum size; the file may then have grown into the headroom past
// the cap, which on Windows makes it bbolt's next mapping step.
func TestSpoolAtCap(t *testing.T) {
	needWine(t)
	for _, capBytes := range []int64{16 << 20, 32 << 20} {
		t.Run(spool.FormatSize(capBytes), func(t *testing.T) { spoolAtCap(t, capBytes) })
	}
}

// capSizes are the ticket sizes the LAN API is sent, in turn: a long
// ticket, a ticket with a logo, and one near the largest a task may be.
var capSizes = []int{64 << 10, 256 << 10, 1000 << 10}

func spoolAtCap(t *testing.T, capBytes int64) {
	dir := t.TempDir()
	p := emulator(t, "kitchen")
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	token := newToken(t, dir)
	config := writeConfig(t, dir, port, p)
	// The LAN API may take the whole spool (its default share is half),
	// and nothing times out while the paper is out.
	extra := fmt.Sprintf("\n[spool]\nmax_size = %d\nquota_api = \"100%%\"\n\n[defaults]\ntimeout = \"1h\"\n", capBytes)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	agent := startAgent(t, t, config, base)
	t.Logf("%.1fs: agent up", time.Since(t0).Seconds())
	defer func() {
		// On failure, what the agent said of its spool: refusals,
		// compactions, failed writes.
		if !t.Failed() {
			return
		}
		for _, l := range strings.Split(agent.logs.String(), "\n") {
			if strings.Contains(l, "spool") || strings.Contains(l, "full") {
				t.Logf("agent: %s", l)
			}
		}
	}()
	dbPath := filepath.Join(dir, "data", "spool.db")

	// Fill until the spool refuses for good: a refusal while much of the
	// file is free makes the agent compact it at once, so a ticket refused
	// is sent again a few times, half a second apart, as a POS retries a 507
	// after its Retry-After.
	var taken []string
	var refused, why string
	for i := 0; refused == "" && i < int(capBytes>>16); i++ {
		tag := fmt.Sprintf("CAP%03d", i)
		n := capSizes[i%len(capSizes)]
		for try := 0; ; try++ {
			code, body := postPayload(t, base, token, tag, n)
			if code == 202 {
				taken = append(taken, tag)
				break
			}
			if code != 507 || !strings.Contains(body, `"storage_full"`) {
				t.Fatalf("ticket %s (%d bytes) with %d taken: HTTP %d %s, want 202 or 507 storage_full", tag, n, len(taken), code, body)
			}
			if try == 3 {
				refused, why = tag, body
				break
			}
			time.Sleep(500 * time.Millisecond) // the agent compacts in its own time
		}
	}
	if refused == "" {
		t.Fatalf("%d tickets taken, more than the cap holds, and none refused", len(taken))
	}
	size := fileSize(t, dbPath)
	h := health(t, base)
	t.Logf("cap %s: %d tickets taken, refused at %s (%s); spool file %d bytes (%d%% of the cap); healthz %v",
		spool.FormatSize(capBytes), len(taken), refused, strings.TrimSpace(why), size, size*100/capBytes, h)
	if h["status"] != "degraded" || h["spool_refusing"] != true {
		t.Errorf("/healthz while the spool refuses tickets: %v, want status degraded and spool_refusing", h)
	}
	// Intake alone may not pass the cap, and it must not stop far below
	// it either (it stopped at half of a 32 MiB cap when bbolt's limit was
	// the cap itself): the tickets taken must fill at least half of it.
	if size > capBytes {
		t.Errorf("spool file %d bytes after intake alone, over the cap %d", size, capBytes)
	}
	var charged int64
	for i := range taken {
		charged += spool.Charge(capSizes[i%len(capSizes)])
	}
	t.Logf("the tickets taken are charged %d%% of the cap", charged*100/capBytes)
	if charged < capBytes/2 {
		t.Errorf("the tickets taken are charged %d bytes, under half of the cap %d", charged, capBytes)
	}

	// A restart at the cap: the cap still holds, and nothing is lost.
	t.Logf("%.1fs: at the cap", time.Since(t0).Seconds())
	agent.interrupt(t)
	agent = startAgent(t, t, config, base)
	t.Logf("%.1fs: restarted", time.Since(t0).Seconds())
	if code, body := postPayload(t, base, token, "CAP-AFTER-RESTART", capSizes[len(capSizes)-1]); code != 507 {
		t.Errorf("a 1 MiB ticket after a restart at the cap: HTTP %d %s, want 507 storage_full", code, body)
		if code == 202 {
			taken = append(taken, "CAP-AFTER-RESTART")
		}
	}

	if err := p.SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, tag := range taken {
		for st := taskState(t, base, token, tag); st != "PRINTED"; st = taskState(t, base, token, tag) {
			if time.Now().After(deadline) {
				t.Fatalf("ticket %s is %s, not printed, 60 s after the paper came back", tag, st)
			}
			time.Sleep(100 * time.Millisecond) // another process prints it
		}
	}
	t.Logf("%.1fs: all printed", time.Since(t0).Seconds())
	cuts := map[string]int{}
	for _, tk := range p.Tickets() {
		for _, tag := range taken {
			if tk.Contains(tag + " END") {
				cuts[tag]++
			}
		}
	}
	for _, tag := range taken {
		if cuts[tag] != 1 {
			t.Errorf("ticket %s printed %d times, want once", tag, cuts[tag])
		}
	}
	size = fileSize(t, dbPath)
	// The documented headroom: two rewrites of the largest records and one
	// growth step. On Windows the file is as large as bbolt's mapping,
	// which grows by powers of two (whole GiB past 1 GiB) and which the
	// spool lets reach the step above the cap and its headroom: once the
	// progress of accepted work passes the cap at all, the file is that
	// step.
	headroom := 2*(4*spool.Charge(spool.DefaultMaxTaskBytes)+16*4<<10) + min(capBytes/16, 16<<20)
	most := mappingStep(capBytes + headroom)
	t.Logf("all %d tickets taken printed once (%d tickets cut); spool file %d bytes (%d%% of the cap; cap and headroom %d, its mapping step %d)",
		len(taken), len(p.Tickets()), size, size*100/capBytes, capBytes+headroom, most)
	if size > most {
		t.Errorf("spool file %d bytes, past the mapping step %d above the cap %d and its headroom", size, most, capBytes)
	}
	if n := strings.Count(agent.logs.String(), "maximum size"); n > 0 {
		t.Errorf("%d log lines say bbolt reached its maximum size:\n%s", n, agent.logs.String())
	}
}

// postPayload submits an ESC/POS ticket of about n bytes that names tag,
// ends in tag+" END" and a cut: the answer's status and body.
func postPayload(t *testing.T, base, token, tag string, n int) (int, string) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("\x1b@" + tag + "\n")
	line := strings.Repeat("CAP ", 15) + "\n"
	for b.Len() < n-len(line)-64 {
		b.WriteString(line)
	}
	b.WriteString(tag + " END\n\x1dV\x01")
	body, _ := json.Marshal(map[string]any{"task_no": tag, "printer": "kitchen", "payload": base64.StdEncoding.EncodeToString(b.Bytes())})
	req, _ := http.NewRequest("POST", base+"/api/v1/tasks", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("submit %s: %v", tag, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// health reads /healthz.
func health(t *testing.T, base string) map[string]any {
	t.Helper()
	_, body, err := get(base+"/healthz", "")
	var h map[string]any
	if err != nil || json.Unmarshal([]byte(body), &h) != nil {
		t.Fatalf("/healthz: %v %q", err, body)
	}
	return h
}

// fileSize is the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// mappingStep is the size of bbolt's mapping on Windows that holds n
// bytes: a power of two up to 1 GiB, then whole GiB.
func mappingStep(n int64) int64 {
	if n >= 1<<30 {
		return (n + 1<<30 - 1) >> 30 << 30
	}
	step := int64(32 << 10)
	for step < n {
		step *= 2
	}
	return step
}
