package hostile

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

// With the default max_size = 0 the spool once had no cap, and the
// unauthenticated raw port stored 20 MiB in 2.2 s until the disk of the PC
// the POS runs on had 4 MiB left. These tests flood the doors of the real
// binary and check the spool's default cap, each door's quota and rate.

// floodJob is about 64 KiB of printable ESC/POS text ending in a cut: a job
// as big as a POS's logo-laden receipt, fast to send.
func floodJob(tag string) []byte {
	var b bytes.Buffer
	b.WriteString("\x1b@")
	line := strings.Repeat("FLOOD ", 10) + "\n"
	for b.Len() < 64<<10 {
		b.WriteString(tag + " " + line)
	}
	b.WriteString("\x1dV\x01")
	return b.Bytes()
}

// rawSend sends job on one connection to the raw port and reports whether
// the agent stored it: an orderly end of the connection after the job (the
// port closes it in order only once the job is on disk), not a reset.
func rawSend(addr string, job []byte) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(job); err != nil {
		return false
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, c)
	return err == nil
}

// spoolSize is the size of the agent's spool file.
func spoolSize(t *testing.T, a *Agent) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(a.Dir, "spool.db"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitPrinted waits until the printer cut a ticket that says text.
func waitPrinted(t *testing.T, a *Agent, text string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, tk := range a.Printer.Tickets() {
			if tk.Contains(text) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no ticket with %q was printed", text)
}

// TestRawFloodStopsAtItsQuota floods the raw port (anyone on the LAN can
// reach it, no token) with ~64 KiB jobs from four connections at a time
// until a few are refused (30 s at most: a loaded machine stored only 25
// of the 47 the quota fits in the three seconds this once had): the raw door stops being stored at its quota (25% of the
// cap by default), the port stops accepting past it (the connections wait
// unread in its backlog until their client gives up), and a POS's ticket
// through the API is still accepted and printed.
func TestRawFloodStopsAtItsQuota(t *testing.T) {
	const capBytes = 16 << 20
	a := start(t, Setup{Raw: true, Tables: fmt.Sprintf("[spool]\nmax_size = %d\n", capBytes)})
	// Out of paper, so the flood stays in the spool: printed jobs would
	// make room for more (spool reclaim, TestPrintedTicketsMakeRoom).
	if err := a.Printer.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	var stored, refused atomic.Int64
	stop := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && refused.Load() < 8; i++ {
				if rawSend(a.RawAddr, floodJob(fmt.Sprintf("W%d-%d", w, i))) {
					stored.Add(1)
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// The raw quota is 4 MiB; a job of 64 KiB counts 4/3 of it plus 1 KiB.
	quotaJobs := int64(capBytes / 4 / (64<<10*4/3 + 1<<10))
	t.Logf("raw flood: %d jobs stored, %d refused; quota fits %d", stored.Load(), refused.Load(), quotaJobs)
	if stored.Load() > quotaJobs+1 {
		t.Errorf("the raw port stored %d jobs of 64 KiB; its quota of 25%% of %d bytes fits %d", stored.Load(), capBytes, quotaJobs)
	}
	if refused.Load() == 0 {
		t.Errorf("no raw job was refused in a 30 s flood")
	}
	// While the raw door is over its quota (nothing printed yet: once its
	// jobs print, the port makes room with them and accepts again).
	code, body, _ := a.do(t, "GET", "/healthz", "", nil)
	if code != 200 || !strings.Contains(body, "degraded") || !strings.Contains(body, "quota_raw") {
		t.Errorf("/healthz after the raw door hit its quota: %d %s; want degraded, naming quota_raw (the page's alert)", code, body)
	}
	// Another door still gets in, and its ticket prints.
	if err := a.Printer.SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	if code := a.submit(t, "API-AFTER-RAW-FLOOD"); code != 202 {
		t.Fatalf("an API ticket after the raw flood: HTTP %d, want 202", code)
	}
	waitPrinted(t, a, "TICKET API-AFTER-RAW-FLOOD")
	logs := a.Logs()
	if !strings.Contains(logs, "SPOOL QUOTA REACHED") || !strings.Contains(logs, "quota_raw") {
		t.Errorf("no WARN naming the raw door's quota and its key quota_raw in the log")
	}
	if n := strings.Count(logs, "RAW PORT NOT ACCEPTING"); n == 0 || n > 6 {
		t.Errorf("%d WARN lines saying the raw port stopped accepting; want one a time it stops, a few at most", n)
	}
	// The flood costs a bounded log: a few warnings, not one a connection.
	if n := strings.Count(logs, "level=WARN") + strings.Count(logs, "level=ERROR"); n > 30 {
		t.Errorf("%d WARN and ERROR lines for one raw flood (%d connections refused); want a few, rate-limited", n, refused.Load())
	}
}

// apiPost posts one ~64 KiB raw payload task and returns the status and
// the Retry-After header.
func apiPost(client *http.Client, a *Agent, taskNo string, payload string) (int, string, error) {
	code, retry, b, err := apiPostBody(client, a, taskNo, payload)
	if err == nil && code == 507 && !strings.Contains(b, "quota_api") {
		return code, "", fmt.Errorf("507 without naming quota_api: %s", b)
	}
	return code, retry, err
}

// apiPostBody is apiPost's request: the status, Retry-After and body.
func apiPostBody(client *http.Client, a *Agent, taskNo string, payload string) (int, string, string, error) {
	body := fmt.Sprintf(`{"task_no":%q,"printer":"p0","payload":%q}`, taskNo, payload)
	req, err := http.NewRequest("POST", a.Base+"/api/v1/tasks", strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b), nil
}

// apiFlood posts ~64 KiB tasks from eight clients for at most d, or until
// after the first answer with status until, and counts the answers by
// status.
func apiFlood(t *testing.T, a *Agent, prefix string, d time.Duration, until int, after time.Duration) (map[int]int, []string) {
	return apiFloodOf(t, a, prefix, d, until, after, apiPost)
}

// apiFloodOf is apiFlood with post for each request.
func apiFloodOf(t *testing.T, a *Agent, prefix string, d time.Duration, until int, after time.Duration,
	post func(client *http.Client, a *Agent, taskNo string, payload string) (int, string, error)) (map[int]int, []string) {
	t.Helper()
	payload := base64.StdEncoding.EncodeToString(floodJob(prefix))
	client := &http.Client{Timeout: 20 * time.Second}
	var mu sync.Mutex
	counts := map[int]int{}
	var retryAfter []string
	var firstErr error
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				mu.Lock()
				end := stop
				mu.Unlock()
				if !time.Now().Before(end) {
					return
				}
				code, ra, err := post(client, a, fmt.Sprintf("%s-%d-%d", prefix, w, i), payload)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if code == until && counts[code] == 0 {
					stop = time.Now().Add(after)
				}
				counts[code]++
				if code == 429 {
					retryAfter = append(retryAfter, ra)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Errorf("API flood: %v", firstErr)
	}
	return counts, retryAfter
}

// TestAPIFloodIsBounded floods the LAN API with ~64 KiB tasks from eight
// clients, into a 24 MiB spool with the API door's rate at 2 a second (a
// burst of 20, well inside the door's quota of about 140 such tasks, so
// the rate binds first however slow the machine: a task the quota refuses
// gives its rate token back, and with a burst of 100 a loaded CI machine's
// flood met the quota first and never saw a 429): past the rate the flood is answered 429 with Retry-After,
// past the door's quota 507 storage_full naming quota_api, never anything
// else; what got in is what the rate allows, and the spool file stays
// under its cap. The flood goes on for three seconds after the first 429
// (20 s at most: on a slow machine the burst lasts longer).
func TestAPIFloodIsBounded(t *testing.T) {
	const capBytes = 24 << 20
	a := start(t, Setup{Tables: fmt.Sprintf("[spool]\nmax_size = %d\nrate_api = 2\n", capBytes)})
	begin := time.Now()
	counts, retryAfter := apiFlood(t, a, "APIFLOOD", 20*time.Second, 429, 3*time.Second)
	elapsed := time.Since(begin).Seconds()
	t.Logf("API flood answers: %v in %.1fs; spool file %d bytes", counts, elapsed, spoolSize(t, a))
	if counts[429] == 0 {
		t.Fatalf("an API flood of %v was never answered 429", counts)
	}
	for code := range counts {
		if code != 202 && code != 429 && code != 507 {
			t.Errorf("the flood was answered %d (%d times); want 202, 429 or 507", code, counts[code])
		}
	}
	for _, ra := range retryAfter {
		if ra == "" || ra == "0" {
			t.Fatalf("a 429 with Retry-After %q", ra)
		}
	}
	// The burst, then 2 a second (and two seconds' slack for the clocks).
	if allowed := 20 + 2*(int(elapsed)+2); counts[202] > allowed {
		t.Errorf("%d tasks accepted in %.1fs; the API door's rate allows %d", counts[202], elapsed, allowed)
	}
	if size := spoolSize(t, a); size > capBytes {
		t.Errorf("spool file %d bytes after the flood, over its cap %d", size, capBytes)
	}
	// The POS's own ticket gets in once the rate refills, unless the
	// door's quota is spent.
	time.Sleep(time.Second)
	if code := a.submit(t, "API-AFTER-API-FLOOD"); code != 202 && code != 507 {
		t.Fatalf("a ticket a second after the flood: HTTP %d, want 202 (or 507 past the quota)", code)
	}
}

// TestDefaultSpoolCap starts the agent with no [spool] table: its startup
// log names the default cap computed from the disk holding data_dir. Then,
// with a small explicit max_size and the default quotas, an API flood is
// answered 507 storage_full once the API door holds about its half of the
// cap (its quota or the file's room, whichever comes first), the spool
// file stays under the cap, and the raw port still takes a job: the API
// door's printed tickets make it room.
func TestDefaultSpoolCap(t *testing.T) {
	a := start(t, Setup{})
	line := regexp.MustCompile(`spool cap ([0-9.]+ [KMG]iB) \(default: 10% of the ([0-9.]+ [KMGT]iB) file system holding ([^,)]+)`).FindStringSubmatch(a.Logs())
	if line == nil {
		t.Fatalf("the startup log names no default spool cap computed from the disk:\n%s", a.Logs())
	}
	if !strings.Contains(line[3], a.Dir) && !strings.HasPrefix(a.Dir, line[3]) {
		t.Errorf("the default cap is computed for %q, not the data dir %s", line[3], a.Dir)
	}
	t.Logf("default: spool cap %s, 10%% of %s", line[1], line[2])

	// At 16 MiB the API door's share of the live data, with the file's
	// own growth (each state change rewrites a task's record, body and
	// all), reaches the size at which intake stops before the API quota
	// does: the raw port must still get its room from the printed
	// tickets and a compaction, not wait behind the other door for good.
	const capBytes = 16 << 20
	b := start(t, Setup{Raw: true, Tables: fmt.Sprintf("[spool]\nmax_size = %d\n", capBytes)})
	if !strings.Contains(b.Logs(), "spool cap 16 MiB (max_size)") {
		t.Errorf("the startup log does not say the explicit cap: want %q", "spool cap 16 MiB (max_size)")
	}
	// Out of paper, so the flood waits in the spool: printed tasks would
	// make room for more (TestPrintedTicketsMakeRoom).
	if err := b.Printer.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	// The API quota and the file's room end the flood at about the same
	// ticket here, and either 507 is a true answer: the check that the
	// quota's names quota_api is TestAPIFloodIsBounded's, at 24 MiB.
	var quotaRefused atomic.Bool
	counts, _ := apiFloodOf(t, b, "QUOTA", 30*time.Second, 507, 500*time.Millisecond,
		func(client *http.Client, a *Agent, taskNo string, payload string) (int, string, error) {
			code, retry, body, err := apiPostBody(client, a, taskNo, payload)
			if code == 507 && strings.Contains(body, "quota_api") {
				quotaRefused.Store(true)
			}
			return code, retry, err
		})
	t.Logf("API flood answers: %v; spool file %d bytes", counts, spoolSize(t, b))
	if counts[507] == 0 {
		t.Fatalf("an API flood into a %d byte spool was never answered 507: %v", capBytes, counts)
	}
	// Half the cap, at ~88 KiB a task.
	if fit := capBytes / 2 / (64<<10*4/3 + 1<<10); counts[202] > fit+1 {
		t.Errorf("%d API tasks accepted; the API door's half of the cap fits %d", counts[202], fit)
	}
	if size := spoolSize(t, b); size > capBytes {
		t.Errorf("spool file %d bytes, over its cap %d", size, capBytes)
	}
	if err := b.Printer.SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	if !rawSend(b.RawAddr, floodJob("RAW-AFTER-API-FLOOD")) {
		t.Fatalf("the raw port refused a job after the API door filled its share")
	}
	waitPrinted(t, b, "RAW-AFTER-API-FLOOD")
	if quotaRefused.Load() && !strings.Contains(b.Logs(), "quota_api") {
		t.Errorf("no log line names quota_api")
	}
}

// pairWith pairs agent a with cloud through `printgate pair` on a's config
// (the manager approves the code it shows) and waits until a's link, which
// looks for a new token every 30 s while unpaired, is connected. It returns
// a's agent id.
func pairWith(t *testing.T, a *Agent, cloud *cloudtest.Cloud) string {
	t.Helper()
	ctx, cancel := contextWithTimeout(t, 90)
	defer cancel()
	out := &lockedBuffer{}
	pair := exec.CommandContext(ctx, bin, "pair", "--config", a.Config)
	pair.Stdout, pair.Stderr = out, out
	if err := pair.Start(); err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`code: (\S+)`)
	for !code.MatchString(out.String()) {
		if ctx.Err() != nil {
			t.Fatalf("pair showed no code:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond) // another process's output
	}
	if err := cloud.Approve(code.FindStringSubmatch(out.String())[1]); err != nil {
		t.Fatal(err)
	}
	if err := pair.Wait(); err != nil {
		t.Fatalf("pair: %v\n%s", err, out.String())
	}
	id, err := os.ReadFile(filepath.Join(a.Dir, "agent-id"))
	if err != nil {
		t.Fatal(err)
	}
	agentID := strings.TrimSpace(string(id))
	if err := cloud.WaitConnected(ctx, agentID, true); err != nil {
		t.Fatalf("agent %q never connected: %v", agentID, err)
	}
	return agentID
}

// TestCloudFloodStopsAtItsQuota floods the agent from a cloud (a
// compromised one, say) with ~64 KiB jobs into a 16 MiB spool: the cloud
// door stops at its half of the cap, the jobs past it are answered job_ack
// rejected storage_full naming quota_cloud, and a POS's ticket through the
// LAN API is still accepted and printed.
func TestCloudFloodStopsAtItsQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("waits up to 30 s for the agent's link to find its pairing")
	}
	cloud := cloudtest.New(cloudtest.Options{PollInterval: time.Second, MaxQueuedJobs: 1000})
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { cloud.Close() })
	ws := "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath
	const capBytes = 16 << 20
	a := start(t, Setup{Tables: fmt.Sprintf("[cloud]\nurl = %q\nauth_url = %q\n[spool]\nmax_size = %d\n", ws, srv.URL+"/oauth", capBytes)})
	agentID := pairWith(t, a, cloud)
	// Out of paper, so the flood stays in the spool (see the raw flood).
	if err := a.Printer.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	const jobs = 150
	for i := range jobs {
		job := wire.Job{TaskNo: fmt.Sprintf("CLOUDFLOOD-%03d", i), Printer: "p0", Payload: floodJob(fmt.Sprintf("C%d", i))}
		if err := cloud.Queue(agentID, job); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := contextWithTimeout(t, 60)
	defer cancel()
	acks, err := cloud.WaitAcks(ctx, agentID, jobs)
	if err != nil {
		t.Fatalf("%d of %d jobs acknowledged: %v", len(acks), jobs, err)
	}
	accepted, rejected := 0, 0
	for _, ack := range acks {
		switch {
		case ack.Result == wire.ResultAccepted:
			accepted++
		case ack.Result == "rejected" && ack.Error != nil && ack.Error.Code == "storage_full" && strings.Contains(ack.Error.Message, "quota_cloud"):
			rejected++
		default:
			t.Errorf("job_ack %s %s %+v; want accepted, or rejected storage_full naming quota_cloud", ack.TaskNo, ack.Result, ack.Error)
		}
	}
	fit := capBytes / 2 / (64<<10*4/3 + 1<<10)
	t.Logf("cloud flood: %d accepted, %d rejected; the cloud door's half fits %d", accepted, rejected, fit)
	if accepted > fit+1 || rejected == 0 {
		t.Errorf("%d cloud jobs accepted and %d rejected; the cloud door's half of the cap fits %d", accepted, rejected, fit)
	}
	if err := a.Printer.SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	if code := a.submit(t, "API-AFTER-CLOUD-FLOOD"); code != 202 {
		t.Fatalf("an API ticket after the cloud flood: HTTP %d, want 202", code)
	}
	waitPrinted(t, a, "TICKET API-AFTER-CLOUD-FLOOD")
	if size := spoolSize(t, a); size > capBytes {
		t.Errorf("spool file %d bytes, over its cap %d", size, capBytes)
	}
}
