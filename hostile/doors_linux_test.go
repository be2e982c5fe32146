package hostile

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/wire"
)

// frames reads every frame the agent sends on ws into a channel, so a test
// can wait for the one it wants while the agent's events and printers
// frames pass by.
type frames struct {
	ws *websocket.Conn
	ch chan map[string]any
}

func readFrames(ws *websocket.Conn) *frames {
	f := &frames{ws: ws, ch: make(chan map[string]any, 4096)}
	go func() {
		defer close(f.ch)
		for {
			var m map[string]any
			if err := ws.ReadJSON(&m); err != nil {
				return
			}
			select {
			case f.ch <- m:
			default: // a test that does not read them: drop
			}
		}
	}()
	return f
}

// send writes one frame.
func (f *frames) send(t *testing.T, m map[string]any) {
	t.Helper()
	f.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := f.ws.WriteJSON(m); err != nil {
		t.Fatalf("write %v: %v", m["type"], err)
	}
}

// wait returns the first frame of type typ whose key field is val.
func (f *frames) wait(t *testing.T, a *Agent, typ, key, val string) map[string]any {
	t.Helper()
	limit := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-f.ch:
			if !ok {
				t.Fatalf("the connection ended before a %s with %s %s\n%s", typ, key, val, a.Logs())
			}
			if m["type"] == typ && m[key] == val {
				return m
			}
		case <-limit:
			t.Fatalf("no %s with %s %s in 30 s\n%s", typ, key, val, a.Logs())
		}
	}
}

// job sends a cloud job with payload text on printer and returns its
// job_ack.
func (f *frames) job(t *testing.T, a *Agent, taskNo, printer, text string) map[string]any {
	t.Helper()
	f.send(t, map[string]any{"type": wire.TypeJob, "task_no": taskNo, "printer": printer,
		"payload": base64.StdEncoding.EncodeToString(rawTicket(text))})
	return f.wait(t, a, wire.TypeJobAck, "task_no", taskNo)
}

// post submits a raw-payload ticket through the LAN API as a POS does.
func (a *Agent) post(t *testing.T, taskNo, printer, text string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"task_no":%q,"printer":%q,"payload":%q}`, taskNo, printer, base64.StdEncoding.EncodeToString(rawTicket(text)))
	code, out, _ := a.do(t, "POST", "/api/v1/tasks", body, map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"})
	return code, out
}

// errCode is the error code of an API answer or a frame's error object.
func errCode(v any) string {
	switch x := v.(type) {
	case string:
		var b struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(x), &b)
		return b.Error.Code
	case map[string]any:
		if e, ok := x["error"].(map[string]any); ok {
			c, _ := e["code"].(string)
			return c
		}
	}
	return ""
}

// barPrinter is a second printer, "bar", that never answers (nothing
// listens on its port): what is sent to it waits.
func barPrinter(t *testing.T) string {
	return fmt.Sprintf("\n[[printers]]\nname = \"bar\"\nurl = \"tcp://127.0.0.1:%d\"\n", freePort(t))
}

// TestCloudCannotAnswerForAPOS: a cloud sees every local task_no in the
// events, so it can send a POS's next task_no first, as a one-line job on
// another printer or with other content. The POS's real order must then be
// refused loudly (409, a code naming what differs), never answered 200
// duplicate and silently not cooked; and the reverse way round too. The
// legitimate cross-door resend (the cloud's copy of an order a POS printed
// through its local fallback, same printer and bytes) is still answered
// duplicate, and prints once.
func TestCloudCannotAnswerForAPOS(t *testing.T) {
	c := newHostileCloud(t)
	s := c.setup()
	s.Printer = barPrinter(t)
	a := start(t, s)
	f := readFrames(c.accepted(t, a))

	if ack := f.job(t, a, "ORD-0012_KITCHEN_v1", "bar", "ONE LINE"); ack["result"] != "accepted" {
		t.Fatalf("the cloud's claim: %v", ack)
	}
	code, body := a.post(t, "ORD-0012_KITCHEN_v1", "p0", "POS ORDER 12")
	if code != 409 || errCode(body) != "task_no_other_printer" {
		t.Errorf("the POS's order after the cloud claimed its task_no on another printer: HTTP %d %s; want 409 task_no_other_printer", code, body)
	}
	if ack := f.job(t, a, "ORD-0013_KITCHEN_v1", "p0", "ONE LINE"); ack["result"] != "accepted" {
		t.Fatalf("the cloud's claim: %v", ack)
	}
	code, body = a.post(t, "ORD-0013_KITCHEN_v1", "p0", "POS ORDER 13")
	if code != 409 || errCode(body) != "task_no_other_content" {
		t.Errorf("the POS's order after the cloud claimed its task_no with other content: HTTP %d %s; want 409 task_no_other_content", code, body)
	}
	// The other way round: the POS's order first, the cloud's other ticket
	// under its task_no is rejected, not acknowledged duplicate.
	if code, body := a.post(t, "ORD-0014_KITCHEN_v1", "p0", "POS ORDER 14"); code != 202 {
		t.Fatalf("POS order 14: HTTP %d %s", code, body)
	}
	if ack := f.job(t, a, "ORD-0014_KITCHEN_v1", "p0", "CLOUD OTHER"); ack["result"] != "rejected" || errCode(ack) != "task_no_other_content" {
		t.Errorf("the cloud's other ticket under a POS's task_no: job_ack %v; want rejected task_no_other_content", ack)
	}
	// The real case dedupe serves: same printer, same bytes, both doors.
	if code, body := a.post(t, "ORD-0015_KITCHEN_v1", "p0", "ORDER 15"); code != 202 {
		t.Fatalf("POS order 15: HTTP %d %s", code, body)
	}
	if ack := f.job(t, a, "ORD-0015_KITCHEN_v1", "p0", "ORDER 15"); ack["result"] != "duplicate" {
		t.Errorf("the cloud's copy of the POS's order: job_ack %v; want duplicate", ack)
	}
	if ack := f.job(t, a, "ORD-0016_KITCHEN_v1", "p0", "ORDER 16"); ack["result"] != "accepted" {
		t.Fatalf("cloud order 16: %v", ack)
	}
	if code, body := a.post(t, "ORD-0016_KITCHEN_v1", "p0", "ORDER 16"); code != 200 || !strings.Contains(body, `"duplicate":true`) {
		t.Errorf("the POS's local fallback of the cloud's order: HTTP %d %s; want 200 duplicate", code, body)
	}
	waitPrinted(t, a, "ORDER 16")
	waitPrinted(t, a, "ORDER 15")
	if n := strings.Count(a.Logs(), "TASK_NO CONFLICT"); n == 0 {
		t.Error("no TASK_NO CONFLICT in the log")
	}
	for _, tk := range a.Printer.Tickets() {
		if tk.Contains("CLOUD OTHER") {
			t.Errorf("the cloud's other ticket printed: %q", tk.Lines)
		}
	}
}

// TestCloudCannotClaimRawNumbers: a cloud that claims the raw port's next
// task numbers (RAW_p0_<the next seconds>_<1..100>) used to leave a POS's
// raw job "no free task_no ... after 100 tries", reset and lost. A raw
// task_no carries a random part no other door can predict.
func TestCloudCannotClaimRawNumbers(t *testing.T) {
	c := newHostileCloud(t)
	s := c.setup()
	s.Raw = true
	s.Printer = barPrinter(t)
	a := start(t, s)
	f := readFrames(c.accepted(t, a))
	start := time.Now().Add(time.Second)
	const secs, per = 3, 100
	for i := range secs {
		stamp := start.Add(time.Duration(i) * time.Second).Local().Format("20060102-150405")
		for n := 1; n <= per; n++ {
			f.send(t, map[string]any{"type": wire.TypeJob, "task_no": fmt.Sprintf("RAW_p0_%s_%d", stamp, n), "printer": "bar",
				"payload": base64.StdEncoding.EncodeToString(rawTicket("CLAIM"))})
		}
	}
	last := fmt.Sprintf("RAW_p0_%s_%d", start.Add((secs-1)*time.Second).Local().Format("20060102-150405"), per)
	f.wait(t, a, wire.TypeJobAck, "task_no", last)
	for time.Now().Before(start) {
		time.Sleep(10 * time.Millisecond) // until the claimed seconds begin
	}
	sendRaw(t, a.RawAddr, rawTicket("RAW POS TICKET"))
	waitPrinted(t, a, "RAW POS TICKET")
}

// TestCloudCancelsOnlyItsOwn: a cloud's cancel of a POS's waiting order is
// refused not_cloud_task and the order stays; its own job it may cancel.
func TestCloudCancelsOnlyItsOwn(t *testing.T) {
	c := newHostileCloud(t)
	s := c.setup()
	s.Printer = barPrinter(t)
	a := start(t, s)
	f := readFrames(c.accepted(t, a))
	if code, body := a.post(t, "POS-WAITING", "bar", "WAITING"); code != 202 {
		t.Fatalf("POS order: HTTP %d %s", code, body)
	}
	f.send(t, map[string]any{"type": wire.TypeCancel, "id": "c-1", "task_no": "POS-WAITING"})
	if r := f.wait(t, a, wire.TypeCommandResult, "id", "c-1"); r["ok"] != false || errCode(r) != "not_cloud_task" {
		t.Errorf("the cloud's cancel of a POS order: %v; want ok false, not_cloud_task", r)
	}
	if _, body, _ := a.do(t, "GET", "/api/v1/tasks/POS-WAITING", "", map[string]string{"Authorization": "Bearer " + a.Token}); strings.Contains(body, "CANCELED") {
		t.Errorf("the POS order was canceled: %s", body)
	}
	if ack := f.job(t, a, "CLOUD-WAITING", "bar", "CLOUD"); ack["result"] != "accepted" {
		t.Fatalf("cloud job: %v", ack)
	}
	f.send(t, map[string]any{"type": wire.TypeCancel, "id": "c-2", "task_no": "CLOUD-WAITING"})
	if r := f.wait(t, a, wire.TypeCommandResult, "id", "c-2"); r["ok"] != true {
		t.Errorf("the cloud's cancel of its own job: %v; want ok", r)
	}
}

// restart stops the agent and runs it again on the same config and data
// dir, waiting for /healthz.
func (a *Agent) restart(t *testing.T) {
	t.Helper()
	a.stop(t)
	a.done = make(chan struct{})
	a.cmd = exec.Command(bin, "run", "--config", a.Config)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, done := a.cmd, a.done
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(a.Base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not come back\n%s", a.Logs())
		}
		time.Sleep(20 * time.Millisecond) // another process's port
	}
}

// TestCloudReprintResentAfterRestartPrintsOnce: the cloud's reprint whose
// answer was lost with the agent's restart is resent under the same id; it
// is answered with the first result and prints no third copy.
func TestCloudReprintResentAfterRestartPrintsOnce(t *testing.T) {
	c := newHostileCloud(t)
	a := start(t, c.setup())
	f := readFrames(c.accepted(t, a))
	if code, body := a.post(t, "REPRINTED", "p0", "REPRINT ME"); code != 202 {
		t.Fatalf("POS order: HTTP %d %s", code, body)
	}
	waitTicket(t, a, 1, "the order")
	f.send(t, map[string]any{"type": wire.TypeReprint, "id": "r-1", "task_no": "REPRINTED"})
	first := f.wait(t, a, wire.TypeCommandResult, "id", "r-1")
	if first["ok"] != true {
		t.Fatalf("reprint: %v", first)
	}
	waitTicket(t, a, 2, "the reprint")
	a.restart(t)
	f = readFrames(c.accepted(t, a))
	f.send(t, map[string]any{"type": wire.TypeReprint, "id": "r-1", "task_no": "REPRINTED"})
	again := f.wait(t, a, wire.TypeCommandResult, "id", "r-1")
	if again["ok"] != true || again["task_no"] != first["task_no"] {
		t.Errorf("the reprint resent after a restart: %v; want the first answer %v", again, first)
	}
	time.Sleep(2 * time.Second) // another process: give a wrong copy time to print
	if n := len(a.Printer.Tickets()); n != 2 {
		t.Errorf("%d tickets printed; want 2 (the order and one reprint)", n)
	}
}

// TestCloudCancelsAnyWhenAllowed: with [cloud] cancel_tasks = "any" the
// store lets its cloud cancel a POS's waiting order too.
func TestCloudCancelsAnyWhenAllowed(t *testing.T) {
	c := newHostileCloud(t)
	s := c.setup()
	s.Tables += "cancel_tasks = \"any\"\n"
	s.Printer = barPrinter(t)
	a := start(t, s)
	f := readFrames(c.accepted(t, a))
	if code, body := a.post(t, "POS-WAITING", "bar", "WAITING"); code != 202 {
		t.Fatalf("POS order: HTTP %d %s", code, body)
	}
	f.send(t, map[string]any{"type": wire.TypeCancel, "id": "c-1", "task_no": "POS-WAITING"})
	if r := f.wait(t, a, wire.TypeCommandResult, "id", "c-1"); r["ok"] != true {
		t.Errorf("the cloud's cancel of a POS order, allowed: %v; want ok", r)
	}
}
