package hostile

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// A hostile POS (or anyone on the store's network who reaches the raw
// port) sends a job that reconfigures or disables the shared printer:
// ESC = 0 leaves it ignoring every later ticket while it still answers
// DLE EOT as healthy; DLE DC4 2 powers it off; GS ( E and FS q write its
// NV memory; DLE DC4 7, GS g 2 and ESC v make it answer into the agent's
// own session. The pen-test of issue 23 (item 4) found them all passed
// through. The raw port strips them (PROTOCOL.md, Raw port), and every raw
// payload the agent prints ends with ESC = 1.

// rawAttack is one instance of each command a raw job may not pass on, by
// name.
var rawAttack = []struct {
	name string
	cmd  []byte
}{
	{"ESC = 0 (printer disabled)", []byte{0x1B, '=', 0x00}},
	{"DLE DC4 2 (power off)", []byte{0x10, 0x14, 0x02, 0x01, 0x08}},
	{"DLE DC4 7 (transmit status)", []byte{0x10, 0x14, 0x07, 0x01}},
	{"DLE DC4 8 (clear buffers)", []byte{0x10, 0x14, 0x08, 0x01, 0x03, 0x14, 0x01, 0x06, 0x02, 0x08}},
	{"ESC v (transmit paper status)", []byte{0x1B, 'v'}},
	{"GS g 2 (transmit maintenance counter)", []byte{0x1D, 'g', '2', 0x00, 0x14, 0x00}},
	{"GS ( E (user setting mode)", []byte{0x1D, '(', 'E', 0x03, 0x00, 0x01, 'I', 'N'}},
	{"GS ( E fn 3 (memory switch)", []byte{0x1D, '(', 'E', 0x0A, 0x00, 0x03, 0x01, '1', '1', '1', '1', '1', '1', '1', '1'}},
	{"GS ( A (test print)", []byte{0x1D, '(', 'A', 0x02, 0x00, 0x00, 0x02}},
	{"GS ( M (save settings)", []byte{0x1D, '(', 'M', 0x02, 0x00, 0x01, 0x01}},
	{"FS q (define NV bit image)", []byte{0x1C, 'q', 0x01, 0x01, 0x00, 0x01, 0x00, 1, 2, 3, 4, 5, 6, 7, 8}},
	{"FS g 1 (write NV user memory)", []byte{0x1C, 'g', '1', 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 'A', 'B', 'C'}},
	{"GS j 1 (ink ASB)", []byte{0x1D, 'j', 0x01}},
	{"FS ( e (optional ASB)", []byte{0x1C, '(', 'e', 0x02, 0x00, 0x33, 0x08}},
	{"GS ( L fn 67 (define NV graphics)", []byte{0x1D, '(', 'L', 0x0C, 0x00, 0x30, 0x43, 0x30, 0x20, 0x20, 0x01, 0x08, 0x00, 0x01, 0x00, 0x31, 0xFF}},
}

// sendRaw writes job to the raw port as nc does and waits for the agent's
// close, which comes once the job is stored.
func sendRaw(t *testing.T, addr string, job []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(job); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the raw port did not end the job cleanly: %v", err)
	}
}

// printedBytes is everything the printer read, as its tickets, the
// unfinished one and what it ignored while disabled.
func printedBytes(p *printertest.Printer) []byte {
	var all []byte
	for _, tk := range p.Tickets() {
		all = append(all, tk.Raw...)
	}
	all = append(all, p.Pending().Raw...)
	return append(all, p.Ignored()...)
}

// waitTicket waits for the printer's n-th ticket and fails with what it
// did print.
func waitTicket(t *testing.T, a *Agent, n int, what string) []printertest.Ticket {
	t.Helper()
	ctx, cancel := contextWithTimeout(t, 30)
	defer cancel()
	tks, err := a.Printer.WaitTickets(ctx, n)
	if err != nil {
		var lines [][]string
		for _, tk := range tks {
			lines = append(lines, tk.Lines)
		}
		t.Fatalf("%s did not print (printer disabled: %v; tickets %q): %v", what, a.Printer.Disabled(), lines, err)
	}
	return tks
}

// TestRawJobCannotReconfigurePrinter: a raw job carrying every such
// command, then an ordinary API ticket. The API ticket prints (on main's
// code ESC = 0 reached the printer and it ignored everything after), the
// raw job's own text prints, and none of the commands reaches the printer.
func TestRawJobCannotReconfigurePrinter(t *testing.T) {
	a := start(t, Setup{Raw: true})
	job := []byte("\x1b@RAW JOB\n")
	for i, c := range rawAttack {
		job = append(job, c.cmd...)
		job = append(job, fmt.Sprintf("LINE %02d\n", i)...)
	}
	job = append(job, 0x1D, 'V', 0x00)
	sendRaw(t, a.RawAddr, job)
	tks := waitTicket(t, a, 1, "the raw job")
	if !tks[0].Contains("RAW JOB") || !tks[0].Contains(fmt.Sprintf("LINE %02d", len(rawAttack)-1)) {
		t.Fatalf("the raw job printed %q", tks[0].Lines)
	}
	if code := a.submit(t, "AFTER-RAW-1"); code != 202 && code != 200 {
		t.Fatalf("submit: HTTP %d", code)
	}
	tks = waitTicket(t, a, 2, "the API ticket after the raw job")
	if !tks[1].Contains("TICKET AFTER-RAW-1") {
		t.Fatalf("second ticket %q", tks[1].Lines)
	}
	got := printedBytes(a.Printer)
	for _, c := range rawAttack {
		if bytes.Contains(got, c.cmd) {
			t.Errorf("%s reached the printer", c.name)
		}
	}
}

// TestPayloadCannotLeavePrinterDisabled: an API payload (not filtered: the
// token holder's bytes print as sent) that ends with the printer disabled
// is followed by ESC = 1, so the next ticket prints.
func TestPayloadCannotLeavePrinterDisabled(t *testing.T) {
	a := start(t, Setup{})
	payload := base64.StdEncoding.EncodeToString([]byte("\x1b@PAYLOAD\n\x1dV\x00\x1b=\x00"))
	body := fmt.Sprintf(`{"task_no":"P-1","printer":"p0","payload":%q}`, payload)
	code, resp, _ := a.do(t, "POST", "/api/v1/tasks", body, map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"})
	if code != 202 && code != 200 {
		t.Fatalf("payload: HTTP %d %s", code, resp)
	}
	waitTicket(t, a, 1, "the payload")
	if code := a.submit(t, "AFTER-PAYLOAD-1"); code != 202 && code != 200 {
		t.Fatalf("submit: HTTP %d", code)
	}
	tks := waitTicket(t, a, 2, "the API ticket after a payload that disabled the printer")
	if !tks[1].Contains("TICKET AFTER-PAYLOAD-1") {
		t.Fatalf("second ticket %q", tks[1].Lines)
	}
}
