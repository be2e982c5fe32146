package hostile

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// A hostile POS (or anyone on the store's network who reaches the raw
// port) sends a job that reconfigures or disables the shared printer:
// ESC = 0 leaves it ignoring every later ticket while it still answers
// DLE EOT as healthy; DLE DC4 2 powers it off; GS ( E and FS q write its
// NV memory; DLE DC4 7, GS g 2 and ESC v make it answer into the agent's
// own session. A pen-test once found them all passed through. The raw port
// strips them (PROTOCOL.md, Raw port), and every raw payload the agent prints
// ends with ESC = 1.

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

// rawUnframed is what passed the raw port and the API while it framed by a
// deny-list: commands that write NV memory or transmit that the strip
// table did not name, a tab-stop smuggle (an Epson ends ESC D at a value
// not above the one before and runs what follows), and commands the
// decoder did not know, framed as 3 bytes where firmware frames them
// longer and eats the next ticket. check is what must not reach the
// printer.
var rawUnframed = []struct {
	name       string
	cmd, check []byte
}{
	{"GS D fn 67 (BMP to NV graphics)", []byte{0x1D, 'D', 0x30, 0x43, 0x30, 0x20, 0x20, 0x31, 'B', 'M', 0x3E, 0, 0, 0}, []byte{0x1D, 'D', 0x30, 0x43}},
	{"FS ( E (NV logo)", []byte{0x1C, '(', 'E', 0x03, 0x00, 0x3C, 0x02, 0x30}, []byte{0x1C, '(', 'E'}},
	{"FS ( L fn 33 (NV layout)", []byte{0x1C, '(', 'L', 0x04, 0x00, 0x21, 0x30, 0x30, 0x30}, []byte{0x1C, '(', 'L', 0x04}},
	{"GS ( k fn 82 (transmit)", []byte{0x1D, '(', 'k', 0x03, 0x00, 0x31, 0x52, 0x30}, []byte{0x1D, '(', 'k', 0x03, 0x00, 0x31, 0x52}},
	{"GS ^ m=1 (waits for FEED)", []byte{0x1D, '^', 0x01, 0x00, 0x01}, []byte{0x1D, '^', 0x01, 0x00, 0x01}},
	{"ESC D 0x50 then GS ( E (tab-stop smuggle)", []byte{0x1B, 'D', 0x50, 0x1D, '(', 'E', 0x03, 0x00, 0x01, 'I', 'N'}, []byte{0x1D, '(', 'E'}},
	{"ESC Z (clone QR, 65,535 bytes to come)", []byte{0x1B, 'Z', 0x00, 'L', 0x06, 0xFF, 0xFF}, []byte{0x1B, 'Z'}},
	{"FS ? (unknown)", []byte{0x1C, '?', 0x21}, []byte{0x1C, '?'}},
	{"GS C 0 (unknown)", []byte{0x1D, 'C', 0x30}, []byte{0x1D, 'C'}},
	{"ESC f 0 (unknown)", []byte{0x1B, 'f', 0x30}, []byte{0x1B, 'f'}},
}

// TestRawJobPassesOnlyFramedCommands: a raw job carrying each of them,
// then an API ticket. None reaches the printer (the raw port removes them,
// naming them in its log), the job's own text and the API ticket print.
func TestRawJobPassesOnlyFramedCommands(t *testing.T) {
	a := start(t, Setup{Raw: true})
	job := []byte("\x1b@RAW JOB\n")
	for i, c := range rawUnframed {
		job = append(job, c.cmd...)
		job = append(job, fmt.Sprintf("\nLINE %02d\n", i)...)
	}
	job = append(job, 0x1D, 'V', 0x00)
	sendRaw(t, a.RawAddr, job)
	tks := waitTicket(t, a, 1, "the raw job")
	if !tks[0].Contains("RAW JOB") || !tks[0].Contains(fmt.Sprintf("LINE %02d", len(rawUnframed)-1)) {
		t.Fatalf("the raw job printed %q", tks[0].Lines)
	}
	if code := a.submit(t, "AFTER-RAW-2"); code != 202 && code != 200 {
		t.Fatalf("submit: HTTP %d", code)
	}
	tks = waitTicket(t, a, 2, "the API ticket after the raw job")
	if !tks[1].Contains("TICKET AFTER-RAW-2") {
		t.Fatalf("second ticket %q", tks[1].Lines)
	}
	got := printedBytes(a.Printer)
	for _, c := range rawUnframed {
		if bytes.Contains(got, c.check) {
			t.Errorf("%s reached the printer", c.name)
		}
	}
	if logs := a.Logs(); !strings.Contains(logs, "ESC Z (a command the agent cannot frame)") {
		t.Errorf("the raw port's log does not name the removed commands:\n%s", logs)
	}
}

// TestPayloadOnlyFramedCommands: an API payload carrying any of them is
// refused, 400 bad_payload naming the command, and nothing prints.
func TestPayloadOnlyFramedCommands(t *testing.T) {
	a := start(t, Setup{})
	for i, c := range rawUnframed {
		payload := base64.StdEncoding.EncodeToString(append(append([]byte("\x1b@PAYLOAD\n"), c.cmd...), "\nEND\n\x1dV\x00"...))
		body := fmt.Sprintf(`{"task_no":"UNFRAMED-%d","printer":"p0","payload":%q}`, i, payload)
		code, resp, _ := a.do(t, "POST", "/api/v1/tasks", body, map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"})
		if code != 400 || !strings.Contains(resp, "bad_payload") || !strings.Contains(resp, "at offset 1") {
			t.Errorf("%s: HTTP %d %s, want 400 bad_payload naming the command and its offset", c.name, code, resp)
		}
	}
	if tks := a.Printer.Tickets(); len(tks) != 0 {
		t.Errorf("printed %d tickets", len(tks))
	}
}
