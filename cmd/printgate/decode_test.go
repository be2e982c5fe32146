package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/spool"

	"golang.org/x/text/encoding/simplifiedchinese"
)

func runDecodeCmd(stdin []byte, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := decodeCmd(context.Background(), decodeEnv{stdin: bytes.NewReader(stdin)}, args, &out, &errb)
	return code, out.String(), errb.String()
}

// renderedTicket is a small document rendered by the agent's renderer for
// an 80 mm Epson, with text that needs escaping in HTML.
func renderedTicket(t *testing.T) []byte {
	t.Helper()
	doc, err := escpos.ParseDocument([]byte(`{"lines": [
		{"text": "TABLE 12", "bold": true},
		{"text": "Fish <b>&</b> chips", "right": "3.80"},
		{"qr": "https://example.com/o/42"},
		{"cut": "full"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := escpos.LookupProfile("epson-80")
	if err != nil {
		t.Fatal(err)
	}
	b, err := escpos.Render(doc, p, escpos.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDecodeRendered ensures a stream made by the renderer decodes to its
// text, drawn exactly as the emulator draws the same ticket, with nothing
// not understood and nothing left mid-command; from a file and from stdin.
func TestDecodeRendered(t *testing.T) {
	stream := renderedTicket(t)
	tickets, _ := printertest.Parse(stream, false)
	if len(tickets) != 1 {
		t.Fatalf("emulator: %d tickets", len(tickets))
	}
	var emu strings.Builder
	printertest.Render(&emu, "ticket", tickets[0])

	path := writeTemp(t, stream)
	for _, args := range [][]string{{path}, {"-"}} {
		code, out, errs := runDecodeCmd(stream, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		for _, want := range []string{
			fmt.Sprintf("%d bytes, 1 ticket(s) cut\n", len(stream)),
			emu.String(),
			"TABLE 12", "Fish <b>&</b> chips", "3.80", "[QR https://example.com/o/42]", "[CUT]┘",
			"\nnot understood:\n  nothing\n",
			"the stream ends between commands",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "NOT CUT") || strings.Contains(out, "middle of a command") {
			t.Errorf("%v: a cut, complete stream reported as uncut or cut short:\n%s", args, out)
		}
	}
}

// TestDecodeTruncated ensures a stream cut off inside a command says so,
// with the offset of the command, and draws the uncut paper as not cut.
func TestDecodeTruncated(t *testing.T) {
	stream := renderedTicket(t)
	stream = stream[:len(stream)-1] // the cut loses its last byte
	code, out, errs := runDecodeCmd(nil, writeTemp(t, stream))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "0 ticket(s) cut") || !strings.Contains(out, "[NOT CUT]┘") || !strings.Contains(out, "Fish <b>&</b> chips") {
		t.Errorf("the uncut paper is not drawn as such:\n%s", out)
	}
	if !strings.Contains(out, "the stream ends in the middle of a command (offset 0x") ||
		!strings.Contains(out, "the printer would take the next job's first bytes as its arguments") {
		t.Errorf("no mid-command warning:\n%s", out)
	}
	if strings.Contains(out, "ends between commands") {
		t.Errorf("says both:\n%s", out)
	}
}

// TestDecodeUnknown ensures a command the decoder does not know is listed
// with its offset in hex and decimal, its length and its bytes.
func TestDecodeUnknown(t *testing.T) {
	pad := strings.Repeat("x", 300) + "\n"
	stream := []byte("\x1b@" + pad + "\x1d\x7f\x01\x02B\n\x1dV\x00")
	code, out, errs := runDecodeCmd(stream, "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := fmt.Sprintf("  offset 0x%06x (%d), 3 bytes: 1d 7f 01\n", 2+len(pad), 2+len(pad))
	if !strings.Contains(out, "\nnot understood:\n"+want) {
		t.Errorf("want %q in:\n%s", want, out)
	}
	if !strings.Contains(out, "│ B") || !strings.Contains(out, "1 ticket(s) cut") {
		t.Errorf("the text after the unknown command is lost:\n%s", out)
	}
}

// TestDecodeHTML ensures --html writes one standalone page with the
// paper's stylesheet and classes, the ticket's text escaped, and the
// report of what was not understood.
func TestDecodeHTML(t *testing.T) {
	stream := append(renderedTicket(t), "\x1d\x7f\x01"...)
	code, out, errs := runDecodeCmd(stream, "--html", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, "<!doctype html>") || !strings.HasSuffix(out, "</html>\n") || strings.Count(out, "<body>") != 1 {
		t.Errorf("not one standalone page:\n%.300s", out)
	}
	for _, want := range []string{escpos.PaperCSS, `class="paper`, `class="cut`, "Fish &lt;b&gt;&amp;&lt;/b&gt; chips", "not understood:", "1d 7f 01"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %.60q", want)
		}
	}
	if strings.Contains(out, "<b>&</b>") {
		t.Errorf("ticket text is not escaped")
	}
}

// TestDecodeUsageAndErrors ensures usage mistakes exit 2 and unreadable or
// oversized input exits 1 with a message.
func TestDecodeUsageAndErrors(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxDecodeBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "want exactly one FILE"},
		{[]string{"a", "b"}, 2, "want exactly one FILE"},
		{[]string{"a", "--task", "A_v1"}, 2, "not both"},
		{[]string{"a", "--config", "x.toml"}, 2, "--config is for --task"},
		{[]string{"--bogus", "a"}, 2, "flag provided but not defined"},
		{[]string{"--help"}, 0, "usage: printgate decode"},
		{[]string{filepath.Join(t.TempDir(), "missing.bin")}, 1, notFoundText},
		{[]string{t.TempDir()}, 1, "is a directory"},
		{[]string{big}, 1, "is over 16 MiB"},
	} {
		code, out, errs := runDecodeCmd(nil, tc.args...)
		says := strings.Contains(errs, tc.want) || (tc.want == notFoundText && saysNotFound(errs))
		if code != tc.code || !says || (code != 0 && out != "") {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want %d and %q", tc.args, code, errs, out, tc.code, tc.want)
		}
	}
}

// payloadBackend is an agent holding fixed tasks: enough of
// localapi.Backend for GET /api/v1/tasks/{no} and its payload.
type payloadBackend struct {
	mu    sync.Mutex
	tasks map[string]*spool.Task
}

func (b *payloadBackend) Task(no string) (*spool.Task, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tasks[no]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", no, spool.ErrNotFound)
	}
	c := *t
	return &c, nil
}

func (b *payloadBackend) Submit(context.Context, spool.NewTask) (*spool.Task, bool, error) {
	return nil, false, errors.New("not in this test")
}
func (b *payloadBackend) Tasks(spool.ListOptions) (spool.Page, error) { return spool.Page{}, nil }
func (b *payloadBackend) Reprint(context.Context, string) (*spool.Task, error) {
	return nil, errors.New("not in this test")
}
func (b *payloadBackend) Cancel(context.Context, string) (*spool.Task, error) {
	return nil, errors.New("not in this test")
}
func (b *payloadBackend) Printers() []api.PrinterInfo { return nil }
func (b *payloadBackend) Health() api.Health          { return api.Health{Status: "ok"} }

// TestDecodeTables reads one stream with each maker's ESC t numbering:
// ESC t 7 is Windows-1253 on an Xprinter (0x80 the euro sign) and
// undefined on an Epson (PC437, 0x80 Ç); a numbering nobody has is refused.
func TestDecodeTables(t *testing.T) {
	f := writeTemp(t, []byte("\x1b@\x1bt\x07\x803.80\n"))
	code, out, errs := runDecodeCmd(nil, "--tables", "xprinter", f)
	if code != 0 || !strings.Contains(out, "€3.80") {
		t.Errorf("--tables xprinter: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runDecodeCmd(nil, f)
	if code != 0 || !strings.Contains(out, "Ç3.80") {
		t.Errorf("default (epson) numbering: exit %d\n%s%s", code, out, errs)
	}
	big5 := writeTemp(t, []byte("\x1c&\xae\xe0 12\n")) // 桌 in Big5
	code, out, errs = runDecodeCmd(nil, "--dbcs", "big5", big5)
	if code != 0 || !strings.Contains(out, "桌 12") {
		t.Errorf("--dbcs big5: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = runDecodeCmd(nil, "--dbcs", "euc-kr", big5)
	if code != 2 || !strings.Contains(errs, `--dbcs "euc-kr"`) {
		t.Errorf("--dbcs euc-kr: exit %d %q", code, errs)
	}
	code, _, errs = runDecodeCmd(nil, "--tables", "star", f)
	if code != 2 || !strings.Contains(errs, `--tables "star"`) {
		t.Errorf("--tables star: exit %d %q", code, errs)
	}
}

// TestDecodeTask ensures --task fetches a raw task's payload through the
// API with the config's token and decodes it; a document task points to
// render, an unknown task and a wrong token are runtime errors.
// The task's printer profile gives the power-on mode, the double-byte set
// and the ESC t numbering.
func TestDecodeTask(t *testing.T) {
	stream := renderedTicket(t)
	gb, err := simplifiedchinese.GB18030.NewEncoder().String("桌 12 堂食")
	if err != nil {
		t.Fatal(err)
	}
	cjk := []byte("\x1b@" + gb + "\n\x1dV\x00")
	// ESC t 7 is Windows-1253 on an Xprinter, whose 0x80 is the euro sign
	// (after FS . leaves its power-on Chinese mode).
	greekEuro := []byte("\x1b@\x1c.\x1bt\x07\x803.80\n\x1dV\x00")
	b := &payloadBackend{tasks: map[string]*spool.Task{
		"EUR_v1": {TaskNo: "EUR_v1", Printer: "c", State: spool.StatePrinted, Payload: greekEuro},
		"RAW_v1": {TaskNo: "RAW_v1", Printer: "k", State: spool.StatePrinted, Payload: stream},
		"DOC_v1": {TaskNo: "DOC_v1", Printer: "k", State: spool.StatePrinted, Document: []byte(`{"lines":[{"text":"hi"}]}`)},
		"CJK_v1": {TaskNo: "CJK_v1", Printer: "c", State: spool.StatePrinted, Payload: cjk},
		// 桌 in Big5, sent with no FS & to a printer that powers on in it.
		"BIG5_v1": {TaskNo: "BIG5_v1", Printer: "tw", State: spool.StatePrinted, Payload: []byte("\x1b@\xae\xe0 12\n\x1dV\x00")},
	}}
	const token = "decode-test-token-0123456789abcdef"
	start := func(serverToken string) string {
		srv := httptest.NewServer(localapi.New(b, localapi.Options{Token: serverToken}))
		t.Cleanup(srv.Close)
		config := filepath.Join(t.TempDir(), "printgate.toml")
		body := fmt.Sprintf("data_dir = %q\nlisten = %q\napi_token = %q\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n[[printers]]\nname = \"c\"\nurl = \"tcp://127.0.0.1:10\"\nprofile = \"xprinter-80\"\n[[printers]]\nname = \"tw\"\nurl = \"tcp://127.0.0.1:11\"\nprofile = \"xprinter-80\"\nencoding = \"Big5\"\n",
			t.TempDir(), srv.Listener.Addr().String(), token)
		if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return config
	}
	config := start(token)

	code, out, errs := runDecodeCmd(nil, "--config", config, "--task", "RAW_v1")
	if code != 0 || !strings.Contains(out, "Fish <b>&</b> chips") || !strings.Contains(out, "1 ticket(s) cut") {
		t.Fatalf("raw task: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runDecodeCmd(nil, "--html", "--config", config, "--task", "RAW_v1")
	if code != 0 || !strings.Contains(out, "<title>printgate decode: task RAW_v1</title>") || !strings.Contains(out, "Fish &lt;b&gt;") {
		t.Errorf("raw task --html: exit %d\n%.400s%s", code, out, errs)
	}
	// A Chinese printer's task decodes as GB18030 unless told otherwise.
	code, out, errs = runDecodeCmd(nil, "--config", config, "--task", "CJK_v1")
	if code != 0 || !strings.Contains(out, "桌 12 堂食") {
		t.Errorf("task of a GB18030 printer: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runDecodeCmd(nil, "--config", config, "--cjk=false", "--task", "CJK_v1")
	if code != 0 || strings.Contains(out, "桌") {
		t.Errorf("--cjk=false still decodes GB18030:\n%s", out)
	}
	// A Big5 printer's, as Big5.
	code, out, errs = runDecodeCmd(nil, "--config", config, "--task", "BIG5_v1")
	if code != 0 || !strings.Contains(out, "桌 12") {
		t.Errorf("task of a Big5 printer: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runDecodeCmd(nil, "--config", config, "--dbcs", "GB18030", "--task", "BIG5_v1")
	if code != 0 || strings.Contains(out, "桌") {
		t.Errorf("--dbcs GB18030 still decodes Big5:\n%s", out)
	}
	// ... and reads ESC t with its maker's numbering.
	code, out, errs = runDecodeCmd(nil, "--config", config, "--task", "EUR_v1")
	if code != 0 || !strings.Contains(out, "€3.80") {
		t.Errorf("task of an Xprinter: ESC t 7 not read as Windows-1253: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runDecodeCmd(nil, "--config", config, "--tables", "epson", "--task", "EUR_v1")
	if code != 0 || strings.Contains(out, "€") {
		t.Errorf("--tables epson still reads ESC t 7 as Windows-1253:\n%s", out)
	}
	code, out, errs = runDecodeCmd(nil, "--config", config, "--task", "DOC_v1")
	if code != 1 || out != "" || !strings.Contains(errs, "ticket document") || !strings.Contains(errs, "printgate render") {
		t.Errorf("document task: exit %d %q %q", code, out, errs)
	}
	code, _, errs = runDecodeCmd(nil, "--config", config, "--task", "NOPE_v1")
	if code != 1 || !strings.Contains(errs, "not_found") {
		t.Errorf("unknown task: exit %d %q", code, errs)
	}
	code, _, errs = runDecodeCmd(nil, "--config", start("another-token-0123456789abcdefgh"), "--task", "RAW_v1")
	if code != 1 || !strings.Contains(errs, "401 unauthorized") {
		t.Errorf("wrong token: exit %d %q", code, errs)
	}
}
