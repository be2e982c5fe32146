package web

import (
	"bufio"
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
)

var alertID = regexp.MustCompile(`data-alert="([^"]+)"`)

func alertIDs(body string) []string {
	var out []string
	for _, m := range alertID.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestAlerts ensures alerts come from the state at start and from changes,
// one per cause, stay until acknowledged, and come back only when the cause
// happens again.
func TestAlerts(t *testing.T) {
	h := newHarness(t, func(_ *Options, f *fakeBackend) {
		f.link.State = "unpaired"
		f.health = api.Health{Status: "degraded", Error: "spool quarantined"}
	})
	h.waitSubscribed()
	c := h.session()
	// The alerts card alone: the printer cards and the Agent card's list
	// word the same causes too.
	frag := func() string {
		body := h.get(c, "/?fragment=live").Body.String()
		start := strings.Index(body, `<section id="alerts"`)
		end := strings.Index(body[start:], "</section>")
		return body[start : start+end]
	}

	body := frag()
	if n := len(alertIDs(body)); n != 2 {
		t.Fatalf("%d alerts at start, want 2 (unpaired, degraded):\n%s", n, body)
	}
	if !strings.Contains(body, "spool quarantined") || !strings.Contains(body, catalog["alert.link_unpaired"].en) {
		t.Fatalf("start alerts:\n%s", body)
	}

	// A printer goes offline: one alert, however often it is told.
	h.f.setPrinter("kitchen", "OFFLINE", "bar")
	h.emitAndWait(api.Change{Kind: "printer", Printer: "kitchen", State: "OFFLINE"})
	h.emitAndWait(api.Change{Kind: "printer", Printer: "kitchen", State: "OFFLINE"})
	body = frag()
	if n := strings.Count(body, "Printer kitchen does not answer. Check that it is switched on"); n != 1 {
		t.Fatalf("%d offline alerts:\n%s", n, body)
	}
	if n := strings.Count(body, "Printer kitchen: its tickets are printing on its backup bar. They go back to it by themselves once it has stayed ready for a while"); n != 1 || strings.Contains(body, "failback_after") {
		t.Fatalf("%d failover alerts, or one that names a config key to a manager:\n%s", n, body)
	}
	// A task held: one alert per task and state.
	h.emitAndWait(api.Change{Kind: "task", TaskNo: "T9", State: "HELD", Printer: "kitchen"})
	h.emitAndWait(api.Change{Kind: "task", TaskNo: "T9", State: "HELD", Printer: "kitchen"})
	h.emitAndWait(api.Change{Kind: "task", TaskNo: "T8", State: "PRINTED"})
	body = frag()
	if n := strings.Count(body, "Task T9 is held: it may or may not have printed. Open it to retry or cancel it."); n != 1 {
		t.Fatalf("%d held alerts:\n%s", n, body)
	}
	// "Task T8", not "T8": the page's random CSRF token may hold "T8".
	if strings.Contains(body, "Task T8") {
		t.Fatal("a printed task raised an alert")
	}
	if n := len(alertIDs(body)); n != 5 {
		t.Fatalf("%d alerts, want 5", n)
	}

	// Ack the offline alert: gone, and not back while the printer stays
	// offline.
	var offline string
	for _, a := range h.p.alerts.list() {
		if a.Key == "printer_down/kitchen" {
			offline = a.ID
		}
	}
	wantRedirect(t, h.post(c, "/alerts/"+offline+"/ack", nil), "/")
	h.emitAndWait(api.Change{Kind: "printer", Printer: "kitchen", State: "OFFLINE"})
	if strings.Contains(frag(), "Printer kitchen does not answer") {
		t.Fatal("the acknowledged alert came back while the cause went on")
	}
	// The printer recovers and drops again: a new alert.
	h.f.setPrinter("kitchen", "READY", "")
	h.emitAndWait(api.Change{Kind: "printer", Printer: "kitchen", State: "READY"})
	body = frag()
	if !strings.Contains(body, "resolved") {
		t.Fatal("the failover alert is not marked resolved")
	}
	// A resolved alert needs no acknowledging: its button dismisses it.
	resolved := body[strings.Index(body, `class="alert resolved"`):]
	resolved = resolved[:strings.Index(resolved, "</li>")]
	if !strings.Contains(resolved, ">Dismiss</button>") || strings.Contains(resolved, ">Acknowledge</button>") {
		t.Errorf("the resolved alert's button:\n%s", resolved)
	}
	h.f.setPrinter("kitchen", "PAPER_OUT", "")
	h.emitAndWait(api.Change{Kind: "printer", Printer: "kitchen", State: "PAPER_OUT"})
	if !strings.Contains(frag(), "Printer kitchen is out of paper. Load paper") {
		t.Fatal("a new outage raised no alert")
	}
}

// TestAlertsBounded ensures the tracker keeps at most its limit.
func TestAlertsBounded(t *testing.T) {
	a := newAlertTracker(newFake(), newClock().Now, 10)
	for i := range 50 {
		a.apply(api.Change{Kind: "task", TaskNo: "T" + strings.Repeat("x", i), State: "FAILED"})
	}
	if n := len(a.list()); n != 10 {
		t.Fatalf("%d alerts, max 10", n)
	}
}

// TestAlertRawRefused ensures each job a raw port refused is its own alert,
// naming the printer and the reason, in both languages.
func TestAlertRawRefused(t *testing.T) {
	a := newAlertTracker(newFake(), newClock().Now, 10)
	a.apply(api.Change{Kind: "raw_refused", Printer: "kitchen", Detail: "job over the 1048576 byte limit"})
	a.apply(api.Change{Kind: "raw_refused", Printer: "kitchen", Detail: "the spool is full"})
	l := a.list()
	if len(l) != 2 {
		t.Fatalf("%d alerts for two refused jobs, want 2", len(l))
	}
	if got := l[1].Text(langEN); !strings.Contains(got, "kitchen") || !strings.Contains(got, "1048576 byte limit") || !strings.Contains(got, "print it again from the POS") {
		t.Errorf("alert text %q", got)
	}
	if got := l[0].Text(langZH); !strings.Contains(got, "打印端口") || !strings.Contains(got, "the spool is full") {
		t.Errorf("Chinese alert text %q", got)
	}
}

// TestAlertRawWaiting ensures a raw port that stopped accepting (the spool
// cannot take a job) raises one alert naming the printer, the reason and
// what to do, in both languages, resolved when it accepts again.
func TestAlertRawWaiting(t *testing.T) {
	a := newAlertTracker(newFake(), newClock().Now, 10)
	a.apply(api.Change{Kind: "raw_waiting", Printer: "kitchen", Detail: "the disk holding the spool is down to [spool] keep_free"})
	a.apply(api.Change{Kind: "raw_waiting", Printer: "kitchen", Detail: "the disk holding the spool is down to [spool] keep_free"})
	l := a.list()
	if len(l) != 1 {
		t.Fatalf("%d alerts while one port waits, want 1", len(l))
	}
	if got := l[0].Text(langEN); !strings.Contains(got, "kitchen") || !strings.Contains(got, "keep_free") || !strings.Contains(got, "Free disk space") {
		t.Errorf("alert text %q", got)
	}
	if got := l[0].Text(langZH); !strings.Contains(got, "打印端口") || !strings.Contains(got, "释放磁盘空间") {
		t.Errorf("Chinese alert text %q", got)
	}
	a.apply(api.Change{Kind: "raw_waiting", Printer: "kitchen"})
	if l := a.list(); len(l) != 1 || !l[0].Resolved {
		t.Fatalf("after the port accepts again: %+v, want the alert resolved", l)
	}
}

// TestDashboard ensures the DOM hooks of the printers and the link box.
func TestDashboard(t *testing.T) {
	h := newHarness(t)
	c := h.session()
	w := h.get(c, "/")
	wantStatus(t, w, http.StatusOK)
	wantBody(t, w, `data-printer="kitchen"`, `data-printer="bar"`,
		`data-field="state" data-state="READY"`, `>Ready</span>`,
		`data-field="queue">2<`, `data-field="failover"`, `data-field="last"><a class="break" href="/tasks/T-last">T-last</a>`,
		`id="link"`, `data-field="link-state" data-state="online"`, `data-field="outbox">3<`,
		`id="alerts"`, `id="live"`, `/static/app.js`)
	// The fragment is only the live part.
	w = h.get(c, "/?fragment=live")
	wantBody(t, w, `data-printer="kitchen"`, `id="link"`)
	if strings.Contains(w.Body.String(), "<html") {
		t.Fatal("the fragment is a whole page")
	}
}

// sseClient opens path on srv with c's cookies and returns a reader of its
// lines.
func sseOpen(t *testing.T, srv *httptest.Server, c *client, path string) (*http.Response, *bufio.Reader, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	for _, ck := range c.cookies {
		req.AddCookie(ck)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return res, bufio.NewReader(res.Body), func() { cancel(); res.Body.Close() }
}

// readEvent reads lines up to the next blank one and returns the event
// name and data.
func readEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var event string
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && (event != "" || data != nil):
			return event, strings.Join(data, "\n")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

// TestEvents ensures /events streams each change and ends when the page
// closes, and that streams are capped.
func TestEvents(t *testing.T) {
	h := newHarness(t)
	h.waitSubscribed()
	srv := httptest.NewServer(h.p)
	defer srv.Close()
	c := h.session()
	res, r, done := sseOpen(t, srv, c, "/events")
	defer done()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// The stream is subscribed once its headers are out.
	h.emitAndWait(api.Change{Kind: "printer", Printer: "kitchen", State: "OFFLINE"})
	ev, data := readEvent(t, r)
	if ev != "change" || data != `{"kind":"printer","printer":"kitchen","state":"OFFLINE"}` {
		t.Fatalf("event %q data %q", ev, data)
	}

	h.p.streams.Store(MaxStreams)
	w := h.get(c, "/events")
	wantStatus(t, w, http.StatusServiceUnavailable)
	h.p.streams.Store(1)

	// Closing the page ends the stream (EOF), well before the client's
	// own deadline would.
	start := time.Now()
	h.p.Close()
	var err error
	for err == nil {
		_, err = r.ReadString('\n')
	}
	if !errors.Is(err, io.EOF) || time.Since(start) > 5*time.Second {
		t.Fatalf("stream ended with %v after %v, want EOF on Close", err, time.Since(start))
	}
}

// TestScan ensures a LAN scan starts from the page, streams its progress
// and results with config blocks, runs one at a time, and stops on Close.
func TestScan(t *testing.T) {
	h := newHarness(t)
	gate := make(chan struct{})
	h.f.scanGate = gate
	srv := httptest.NewServer(h.p)
	defer srv.Close()
	c := h.session()

	wantRedirect(t, h.post(c, "/printers/scan", nil), "/printers")
	wantRedirect(t, h.post(c, "/printers/scan", nil), "/printers")
	wantBody(t, h.get(c, "/printers"), catalog["flash.scanrunning"].en, `id="scan-progress"`, `data-running="1"`)

	_, r, done := sseOpen(t, srv, c, "/printers/scan")
	defer done()
	for {
		ev, data := readEvent(t, r)
		if ev != "progress" {
			t.Fatalf("event %q before progress", ev)
		}
		if data == `{"done":1,"total":4}` {
			break
		}
	}
	close(gate)
	var ev, data string
	for ev != "result" {
		ev, data = readEvent(t, r)
	}
	if !strings.Contains(data, `"url":"tcp://192.0.2.50:9100"`) || !strings.Contains(data, `[[printers]]\nname = \"printer-1\"\nurl = \"tcp://192.0.2.50:9100\"`) {
		t.Fatalf("result %s", data)
	}
	w := h.get(c, "/printers")
	wantBody(t, w, `id="scan-results"`, "<pre>[[printers]]\nname = &#34;printer-1&#34;\nurl = &#34;tcp://192.0.2.50:9100&#34;\n</pre>")
	if got := h.f.Calls(); len(got) != 1 || got[0] != "scan" {
		t.Fatalf("calls %v: one scan at a time", got)
	}

	// A scan in progress stops when the page closes.
	h.f.scanGate = make(chan struct{})
	wantRedirect(t, h.post(c, "/printers/scan", nil), "/printers")
	h.p.Close() // waits for the scan goroutine; goleak checks the rest
	if st := h.p.scan.state(); st.Running || st.Err == "" {
		t.Fatalf("scan after Close: %+v", st)
	}
}

// TestPrintersPage ensures printer details, test prints and the config
// lines of discovered devices.
func TestPrintersPage(t *testing.T) {
	h := newHarness(t)
	h.f.found = append(h.f.found, foundSerial())
	c := h.session()
	w := h.get(c, "/printers")
	wantBody(t, w, `data-printer="kitchen"`, `class="test-print"`, "80 mm, 48 columns, cutter", "TM-T20II", "epson-80",
		`data-field="raw-port" class="break">0.0.0.0:9101 · 7 jobs taken, 1 refused`,
		`id="scan"`, "name = &#34;printer-1&#34;\nurl = &#34;serial://COM3?baud=19200&#34;")
	w = h.post(c, "/printers/kitchen/test", nil)
	wantRedirect(t, w, "/printers")
	wantBody(t, h.get(c, "/printers"), `id="flash"`, "Test ticket queued on kitchen", `href="/tasks/test-kitchen"`)
	w = h.post(c, "/printers/garage/test", nil)
	wantRedirect(t, w, "/printers")
	wantBody(t, h.get(c, "/printers"), "There is no printer garage")
	if got := h.f.Calls(); len(got) != 1 || got[0] != "test kitchen" {
		t.Fatalf("calls %v", got)
	}
	if got := tomlString(`C:\a "b"` + "\n"); got != `"C:\\a \"b\"\u000A"` {
		t.Fatalf("tomlString: %s", got)
	}
}

// TestPairing ensures the three pairing views and that unpairing needs
// the PIN again.
func TestPairing(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := h.session()
	w := h.get(c, "/pairing")
	wantBody(t, w, `id="pairing"`, `id="paired-store"`, "Store 12", `id="unpair"`, `name="pin"`)

	w = h.post(c, "/pairing/unpair", url.Values{"pin": {"000000"}})
	wantRedirect(t, w, "/pairing")
	wantBody(t, h.get(c, "/pairing"), `class="flash flash-error"`, catalog["flash.wrongpin"].en)
	if len(h.f.Calls()) != 0 {
		t.Fatal("unpaired with a wrong PIN")
	}
	wantRedirect(t, h.post(c, "/pairing/unpair", url.Values{"pin": {testPIN}}), "/pairing")
	if got := h.f.Calls(); len(got) != 1 || got[0] != "unpair" {
		t.Fatalf("calls %v", got)
	}

	h.f.mu.Lock()
	h.f.pairing = api.PairingInfo{Configured: true, UserCode: "WDJB-MJHT", VerificationURI: "https://cloud.example/device",
		VerificationURIComplete: "https://cloud.example/device?user_code=WDJB-MJHT", Expires: time.Now().Add(10 * time.Minute)}
	h.f.mu.Unlock()
	w = h.get(c, "/pairing")
	wantBody(t, w, `id="pair-qr"`, `src="data:image/png;base64,`, `id="user-code"`, "WDJB-MJHT", `data-refresh="1"`)

	h.f.mu.Lock()
	h.f.pairing = api.PairingInfo{}
	h.f.mu.Unlock()
	wantBody(t, h.get(c, "/pairing"), "[cloud]", html.EscapeString(catalog["pair.notconfigured"].en))
}

// TestLogStream ensures the tail is asked with the page's filters and its
// lines arrive as events.
func TestLogStream(t *testing.T) {
	h := newHarness(t)
	h.f.tail = []string{"time=1 level=WARN msg=\"printer <b>kitchen</b> offline\"", "time=2 level=WARN msg=other"}
	srv := httptest.NewServer(h.p)
	defer srv.Close()
	c := h.session()
	wantBody(t, h.get(c, "/logs?level=WARN"), `id="log-lines"`, `name="level"`, `<option value="WARN" selected>`, `name="q"`)
	wantStatus(t, h.get(c, "/logs/stream?level=LOUD"), http.StatusBadRequest)

	_, r, done := sseOpen(t, srv, c, "/logs/stream?level=WARN&q=kitchen")
	defer done()
	ev, data := readEvent(t, r)
	if ev != "line" || data != h.f.tail[0] {
		t.Fatalf("event %q data %q", ev, data)
	}
	h.f.mu.Lock()
	o := h.f.tailOpts[0]
	h.f.mu.Unlock()
	if o.Level.String() != "WARN" || o.Contains != "kitchen" || o.Lines != logLines || !o.Follow {
		t.Fatalf("tail options %+v", o)
	}
}
