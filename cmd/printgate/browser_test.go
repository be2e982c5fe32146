package main

// Browser tests of the manager page: the real binary, emulated
// printers, and Debian's chromium driven by chromedp. They rely on the DOM
// hooks of the page contract (web-contract: ids, data-* attributes) and
// nothing else of the markup. Run one with
//   go test -run 'TestBrowser/Reprint' ./cmd/printgate
// Screenshots go to a temp dir the log names, or to $PRINTGATE_SCREENSHOTS.

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"printgate/agent/web"
	"printgate/drivers/printertest"
)

// TestBrowser runs the browser tests one after the other (never in
// parallel: a browser is heavy on a small machine), sharing one build of
// the binary. Each test has its own agent, printers and browser.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests run the real binary and chromium")
	}
	s := newBrowserSuite(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *browserSuite)
	}{
		{"Smoke", browserSmoke},
		{"SetupThenLogin", browserSetupThenLogin},
		{"PrinterOfflineLive", browserPrinterOfflineLive},
		{"Reprint", browserReprint},
		{"RetryOnAnotherPrinter", browserRetryOnAnotherPrinter},
		{"CancelQueued", browserCancelQueued},
		{"LockoutAfterFiveWrongPINs", browserLockout},
		{"PostWithoutCSRFRefused", browserCSRF},
		{"Chinese", browserChinese},
		{"LayoutAndScreenshots", browserLayout},
		{"TaskWords", browserTaskWords},
		{"ReprintWhileFailbackPending", browserReprintWhileFailbackPending},
		{"ErrorPage", browserErrorPage},
		{"AddPrinterByAddress", browserAddByAddress},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, s) })
	}
}

// browserSmoke checks the harness itself, on what the API serves without
// the page: chromium starts, loads /healthz from the real agent, runs
// JavaScript (a fetch with the token), and the viewport is the size asked.
func browserSmoke(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{})
	b := s.openTab(t, a.base, 390, 844)
	b.open("/healthz")
	text := eval[string](b, "body text", `document.body.innerText`)
	var h struct{ Status, Link string }
	if err := json.Unmarshal([]byte(text), &h); err != nil || h.Status != "ok" || h.Link != "disabled" {
		t.Errorf("/healthz in the browser: %q (%v), want status ok and link disabled", text, err)
	}
	printers := eval[string](b, "fetch the printers",
		`fetch("/api/v1/printers", {headers: {Authorization: "Bearer `+browserToken+`"}}).then(r => r.text())`)
	var p struct{ Printers []struct{ Name string } }
	if err := json.Unmarshal([]byte(printers), &p); err != nil {
		t.Fatalf("/api/v1/printers: %q: %v", printers, err)
	}
	var names []string
	for _, x := range p.Printers {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"bar", "front", "kitchen"}) {
		t.Errorf("printers %q, want bar, front, kitchen", names)
	}
	if st := b.fetchStatus("GET", "/api/v1/printers", nil); st != 401 {
		t.Errorf("the API without the token answered the page %d, want 401", st)
	}
	b.noHorizontalScroll("/healthz")
	if b.screenshot("smoke-healthz") == "" {
		t.Error("no screenshot")
	}
}

// browserSetupThenLogin: on the first run (no PIN) the page on this PC
// offers the PIN setup, which asks for the one-time code the agent printed
// at start; the PIN it sets is the one stored; setup is then closed; and
// the manager logs out and in with the PIN.
func browserSetupThenLogin(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{})
	code := a.setupCode(t)
	b := s.openTab(t, a.base, 1280, 800)
	b.open("/setup")
	b.do("fill in the setup form",
		chromedp.WaitVisible(chromedp.CSS("form#setup")),
		chromedp.SetValue(chromedp.CSS(`form#setup input[name=code]`), code),
		chromedp.SetValue(chromedp.CSS(`form#setup input[name=pin]`), browserPIN),
		chromedp.SetValue(chromedp.CSS(`form#setup input[name=pin2]`), browserPIN),
	)
	b.clickAndWait(`form#setup button[type=submit]`)
	hash, err := web.LoadPIN(a.dataDir)
	if err != nil {
		b.fail("after the setup form: %v", err)
	}
	if !web.VerifyPIN(hash, browserPIN) {
		t.Fatal("the stored PIN is not the one typed in the setup form")
	}
	if st := b.fetchStatus("GET", "/setup", nil); st != 403 {
		t.Errorf("GET /setup once a PIN is set: %d, want 403", st)
	}

	// Setup may sign the manager in; either way, log out and in again.
	b.open("/")
	if b.path() != "/login" {
		b.do("the dashboard after setup", chromedp.WaitVisible(chromedp.CSS(`[data-printer="kitchen"]`)))
		b.clickAndWait(`form#logout [type=submit]`)
		b.open("/")
		if p := b.path(); p != "/login" {
			b.fail("after logout the dashboard is still shown (at %s)", p)
		}
	}
	b.open("/login")
	b.do("a wrong PIN",
		chromedp.WaitVisible(chromedp.CSS("form#login")),
		chromedp.SetValue(chromedp.CSS(`form#login input[name=pin]`), "000000"),
	)
	b.clickAndWait(`form#login button[type=submit]`)
	b.do("the login error", chromedp.WaitVisible(chromedp.CSS(".error")))
	b.login(browserPIN)
}

// browserPrinterOfflineLive: the dashboard shows a printer going offline
// when the emulator drops it, without a reload (the page's events).
func browserPrinterOfflineLive(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	b := s.openTab(t, a.base, 1280, 800)
	b.login(browserPIN)
	state := `(document.querySelector('[data-printer="front"] [data-field="state"]') || {dataset: {}}).dataset.state`
	b.waitJS("front shown READY", state+` === "READY"`)
	ready := eval[string](b, "the READY label", `document.querySelector('[data-printer="front"] [data-field="state"]').innerText`)
	eval[chromedp.Void](b, "mark the page", `window.__pgOld = true`)

	if err := a.printers["front"].SetFault(printertest.FaultOffline, true); err != nil {
		t.Fatal(err)
	}
	b.waitJS("front shown OFFLINE", state+` === "OFFLINE"`)
	if !eval[bool](b, "the marker", `window.__pgOld === true`) {
		t.Error("the page was reloaded to show the change; it must update in place")
	}
	offline := eval[string](b, "the OFFLINE label", `document.querySelector('[data-printer="front"] [data-field="state"]').innerText`)
	if strings.TrimSpace(offline) == "" || offline == ready {
		t.Errorf("state label %q after going offline (was %q): want a label of its own", offline, ready)
	}
	// The others are untouched.
	if st := eval[string](b, "kitchen", `document.querySelector('[data-printer="kitchen"] [data-field="state"]').dataset.state`); st != "READY" {
		t.Errorf("kitchen shown %s", st)
	}
	b.screenshot("dashboard-front-offline")
}

// taskState is the state code the task page shows.
const taskStateJS = `(document.querySelector("[data-task-state]") || {getAttribute: () => ""}).getAttribute("data-task-state")`

// browserReprint: a printed task's page offers a reprint; confirming it
// prints a new version with the REPRINT banner at the emulator and shows
// the new task with a flash.
func browserReprint(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	a.submit(t, "R1_v1", "front", "")
	a.waitState(t, "R1_v1", "PRINTED")
	a.waitTicket(t, "front", "TICKET R1_v1")

	b := s.openTab(t, a.base, 1280, 800)
	b.login(browserPIN)
	b.open("/tasks/R1_v1")
	b.waitJS("R1_v1 shown PRINTED", taskStateJS+` === "PRINTED"`)
	if n := eval[int](b, "timeline", `document.querySelectorAll("#timeline li").length`); n < 2 {
		t.Errorf("the timeline has %d entries, want every state (at least accepted and printed)", n)
	}
	if p := eval[string](b, "preview", `(document.querySelector("#preview") || {innerText: ""}).innerText`); !strings.Contains(p, "TICKET R1_v1") {
		t.Errorf("the preview %q does not show the ticket's text", p)
	}
	b.do("the reprint link", chromedp.WaitVisible(chromedp.CSS("a#reprint")))
	b.clickAndWait("a#reprint")
	b.do("the confirmation", chromedp.WaitVisible(chromedp.CSS("form#confirm")))
	if got := a.printers["front"].Tickets(); len(got) != 1 {
		t.Fatalf("the confirmation page printed already: %d tickets", len(got))
	}
	b.clickAndWait(`form#confirm button[type=submit]`)
	b.do("the flash", chromedp.WaitVisible(chromedp.CSS("#flash")))
	if p := b.path(); p != "/tasks/R1_v2" {
		t.Errorf("after the reprint the page is %s, want the new task /tasks/R1_v2", p)
	}
	a.waitTicket(t, "front", "REPRINT", "TICKET R1_v1")
	a.waitState(t, "R1_v2", "PRINTED")
}

// browserRetryOnAnotherPrinter: a task that timed out on an offline
// printer is retried from its page on another printer, chosen from the
// list, and prints there.
func browserRetryOnAnotherPrinter(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	if err := a.printers["front"].SetFault(printertest.FaultOffline, true); err != nil {
		t.Fatal(err)
	}
	a.submit(t, "T1_v1", "front", "2s")
	a.waitState(t, "T1_v1", "TIMED_OUT")

	b := s.openTab(t, a.base, 1280, 800)
	b.login(browserPIN)
	b.open("/tasks/T1_v1")
	b.waitJS("T1_v1 shown TIMED_OUT", taskStateJS+` === "TIMED_OUT"`)
	b.do("the retry link", chromedp.WaitVisible(chromedp.CSS("a#retry")))
	b.clickAndWait("a#retry")
	b.do("the confirmation", chromedp.WaitVisible(chromedp.CSS(`form#confirm select[name=printer]`)))
	options := eval[[]string](b, "printer choices", `[...document.querySelectorAll("form#confirm select[name=printer] option")].map(o => o.value)`)
	if !slices.Contains(options, "kitchen") || !slices.Contains(options, "front") {
		t.Errorf("retry offers printers %q, want the configured ones", options)
	}
	b.do("choose kitchen", chromedp.SetValue(chromedp.CSS(`form#confirm select[name=printer]`), "kitchen"))
	b.clickAndWait(`form#confirm button[type=submit]`)
	b.do("the flash", chromedp.WaitVisible(chromedp.CSS("#flash")))
	a.waitTicket(t, "kitchen", "TICKET T1_v1")
	if n := len(a.printers["front"].Tickets()); n != 0 {
		t.Errorf("front printed %d tickets while offline", n)
	}
}

// browserCancelQueued: a task waiting for an offline printer is cancelled
// from its page and never prints when the printer comes back.
func browserCancelQueued(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	front := a.printers["front"]
	if err := front.SetFault(printertest.FaultOffline, true); err != nil {
		t.Fatal(err)
	}
	a.submit(t, "C1_v1", "front", "60s")

	b := s.openTab(t, a.base, 1280, 800)
	b.login(browserPIN)
	b.open("/tasks/C1_v1")
	b.do("the cancel link", chromedp.WaitVisible(chromedp.CSS("a#cancel")))
	b.clickAndWait("a#cancel")
	b.do("the confirmation", chromedp.WaitVisible(chromedp.CSS("form#confirm")))
	b.clickAndWait(`form#confirm button[type=submit]`)
	b.do("the flash", chromedp.WaitVisible(chromedp.CSS("#flash")))
	a.waitState(t, "C1_v1", "CANCELED")
	b.open("/tasks/C1_v1")
	b.waitJS("C1_v1 shown CANCELED", taskStateJS+` === "CANCELED"`)
	if eval[bool](b, "cancel offered?", `!!document.querySelector("a#cancel")`) {
		t.Error("a cancelled task still offers cancel")
	}

	// The printer comes back: a task behind C1 prints, C1 does not.
	if err := front.SetFault(printertest.FaultOffline, false); err != nil {
		t.Fatal(err)
	}
	a.submit(t, "D1_v1", "front", "")
	a.waitTicket(t, "front", "TICKET D1_v1")
	for _, tk := range front.Tickets() {
		if tk.Contains("TICKET C1_v1") {
			t.Errorf("the cancelled task printed: %q", tk.Text())
		}
	}
}

// browserLockout: five wrong PINs lock the client out, so even the right
// PIN is then refused.
func browserLockout(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	b := s.openTab(t, a.base, 1280, 800)
	for i := 1; i <= 5; i++ {
		b.open("/login")
		b.do("a wrong PIN",
			chromedp.WaitVisible(chromedp.CSS("form#login")),
			chromedp.SetValue(chromedp.CSS(`form#login input[name=pin]`), "11111"+string(rune('0'+i))),
		)
		b.clickAndWait(`form#login button[type=submit]`)
		if p := b.path(); p != "/login" {
			b.fail("wrong PIN %d let the client through to %s", i, p)
		}
		b.do("the error", chromedp.WaitVisible(chromedp.CSS(".error")))
	}
	// The sixth try is the right PIN: still refused.
	b.open("/login")
	if eval[bool](b, "login form?", `!!document.querySelector("form#login input[name=pin]")`) {
		b.do("the right PIN", chromedp.SetValue(chromedp.CSS(`form#login input[name=pin]`), browserPIN))
		b.clickAndWait(`form#login button[type=submit]`)
		b.do("the lockout message", chromedp.WaitVisible(chromedp.CSS(".error")))
	}
	b.open("/")
	if p := b.path(); p != "/login" {
		b.fail("after five wrong PINs the right one signed the client in (at %s)", p)
	}
	b.screenshot("login-locked-out")
}

// browserCSRF: a POST from the signed-in page without the CSRF token is
// refused with 403 and does nothing; the same POST with the page's token
// is accepted, so the 403 is the token's doing.
func browserCSRF(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	b := s.openTab(t, a.base, 1280, 800)
	b.login(browserPIN)
	token := eval[string](b, "the page's CSRF token", `(document.querySelector("input[name=csrf]") || {value: ""}).value`)
	if token == "" {
		b.fail("the dashboard has no input[name=csrf] (the logout form needs one)")
	}
	for _, h := range []map[string]string{nil, {"X-CSRF-Token": "not-the-token"}} {
		if st := b.fetchStatus("POST", "/printers/front/test", h); st != 403 {
			t.Errorf("POST /printers/front/test with headers %v: %d, want 403", h, st)
		}
		if st := b.fetchStatus("POST", "/logout", h); st != 403 {
			t.Errorf("POST /logout with headers %v: %d, want 403", h, st)
		}
	}
	if n := len(a.printers["front"].Tickets()); n != 0 {
		t.Errorf("a refused test print printed %d tickets", n)
	}
	b.open("/")
	if p := b.path(); p != "/" {
		t.Errorf("a refused logout ended the session (at %s)", p)
	}
	if st := b.fetchStatus("POST", "/printers/front/test", map[string]string{"X-CSRF-Token": token}); st == 403 || st == 401 || st >= 500 {
		t.Errorf("POST /printers/front/test with the page's token: %d, want it accepted", st)
	}
	a.waitTicket(t, "front")
}

var han = regexp.MustCompile(`\p{Han}`)

// browserChinese: the language switch turns the page into Simplified
// Chinese (html lang, the labels) and back.
func browserChinese(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	b := s.openTab(t, a.base, 1280, 800)
	b.login(browserPIN)
	if lang := eval[string](b, "lang", `document.documentElement.lang`); lang != "en" {
		t.Errorf("html lang %q for an English browser, want en", lang)
	}
	stateLabel := `document.querySelector('[data-printer="kitchen"] [data-field="state"]').innerText`
	b.waitJS("kitchen shown", `!!document.querySelector('[data-printer="kitchen"] [data-field="state"]')`)
	if l := eval[string](b, "English label", stateLabel); han.MatchString(l) {
		t.Errorf("English page shows %q", l)
	}
	b.clickAndWait(`a[data-lang="zh-CN"]`)
	b.do("the Chinese page", chromedp.WaitReady(chromedp.CSS(`html[lang="zh-CN"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-printer="kitchen"]`)))
	b.waitJS("kitchen's state in Chinese", `/\p{Script=Han}/u.test(`+stateLabel+`)`)
	b.screenshot("dashboard-zh-CN")
	b.open("/tasks")
	if lang := eval[string](b, "lang", `document.documentElement.lang`); lang != "zh-CN" {
		t.Errorf("the choice did not stick: /tasks is in %q", lang)
	}
	if !han.MatchString(eval[string](b, "text", `document.body.innerText`)) {
		t.Error("/tasks in Chinese shows no Chinese")
	}
	b.clickAndWait(`a[data-lang="en"]`)
	if lang := eval[string](b, "lang", `document.documentElement.lang`); lang != "en" {
		t.Errorf("after switching back: lang %q", lang)
	}
}

// The tasks of the layout test: one of each kind a manager meets.
const (
	layoutPrinted  = "ORD20261130-0042_KITCHEN_v1" // printed on kitchen
	layoutFailover = "ORD20261130-0043_KITCHEN_v1" // printed on bar, kitchen's backup
	layoutPaperOut = "ORD20261130-0044_BAR_v1"     // waiting: bar is out of paper
	layoutTimedOut = "ORD20261130-0045_FRONT_v1"   // NOT printed: front offline
)

// layoutAgent starts an agent and brings it to a store's bad hour:
// kitchen failed over to bar and ready again with failback pending, bar
// out of paper with a ticket waiting, front offline with a ticket timed
// out, and a ticket printed on each of kitchen and bar.
func layoutAgent(t *testing.T, s *browserSuite) *pageAgent {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN, printerLines: map[string]string{
		"kitchen": "failover_after = \"1s\"\nfailback_after = \"1h\"\n",
	}})
	// A ticket as a POS sends it, so the previews show sizes,
	// right-aligned quantities, a QR code and a barcode.
	ticket := func(no string) []any {
		return []any{
			map[string]any{"text": "TABLE 12", "align": "center", "size": "2x2", "bold": true},
			map[string]any{"text": "Kung pao chicken", "right": "x2"},
			map[string]any{"text": "Fried rice, no egg", "right": "x1"},
			map[string]any{"rule": "-"},
			map[string]any{"qr": "https://example.com/o/42", "size": 4},
			map[string]any{"barcode": "ORD20261130-0042", "type": "CODE128"},
			map[string]any{"text": "TICKET " + no},
			map[string]any{"cut": "partial"},
		}
	}
	a.submitDoc(t, layoutPrinted, "kitchen", "", ticket(layoutPrinted))
	a.waitState(t, layoutPrinted, "PRINTED")

	// Kitchen's cover opens with a ticket waiting: after failover_after
	// the ticket prints on bar with the FAILOVER banner. The cover closes:
	// kitchen is ready, and failback waits an hour.
	kitchen := a.printers["kitchen"]
	if err := kitchen.SetFault(printertest.FaultCoverOpen, true); err != nil {
		t.Fatal(err)
	}
	a.printerState(t, "kitchen", "COVER_OPEN")
	a.submitDoc(t, layoutFailover, "kitchen", "60s", ticket(layoutFailover))
	a.waitState(t, layoutFailover, "PRINTED")
	a.waitTicket(t, "bar", "FAILOVER", "TICKET "+layoutFailover)
	if err := kitchen.SetFault(printertest.FaultCoverOpen, false); err != nil {
		t.Fatal(err)
	}
	a.printerState(t, "kitchen", "READY")
	a.printerState(t, "kitchen", "→bar")

	// Bar runs out of paper and a ticket comes: the health check before
	// the job finds it and the task waits with the printer's status bytes
	// in its message. Should the idle status poll (every
	// 5 s) notice first, the task still waits with reason PAPER_OUT (the
	// lane queues it with the state it knows), only without the bytes.
	if err := a.printers["bar"].SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	a.submitDoc(t, layoutPaperOut, "bar", "10m", ticket(layoutPaperOut))
	a.printerState(t, "bar", "PAPER_OUT")
	for deadline := time.Now().Add(browserStep); ; time.Sleep(50 * time.Millisecond) {
		if st := a.waitState(t, layoutPaperOut, "QUEUED"); st.Reason == "PAPER_OUT" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s waits without reason PAPER_OUT", layoutPaperOut)
		}
	}

	if err := a.printers["front"].SetFault(printertest.FaultOffline, true); err != nil {
		t.Fatal(err)
	}
	a.submitDoc(t, layoutTimedOut, "front", "2s", ticket(layoutTimedOut))
	a.waitState(t, layoutTimedOut, "TIMED_OUT")
	return a
}

// English codes that must never reach a person's eyes: task states,
// reasons and printer states as the API spells them.
var codeWord = regexp.MustCompile(`\b(?:[A-Z]{2,}(?:_[A-Z]+)+|READY|BUSY|OFFLINE|ERROR|HELD|QUEUED|SENDING|PRINTED|PARKED|FAILED|CANCELED|ACCEPTED|UNKNOWN|INVALID|RENDER)\b`)

// latinWord finds the Latin words of a Chinese page; a word with a digit
// is a task number, an address or a model, not a label.
var latinWord = regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9._:/@-]*`)

// zhAllowed are the Latin words a Chinese page may show: names (of the
// product, the printers, config keys and commands) and acronyms.
var zhAllowed = map[string]bool{
	"printgate": true, "PIN": true, "POS": true, "ESC/POS": true, "QR": true, "USB": true, "TCP": true, "TLS": true,
	"kitchen": true, "bar": true, "front": true, "failback_after": true, "listen": true, "url": true, "auth_url": true,
	"pin": true, "set": true, "logs": true, "sudo": true, "chown": true, "EN": true, "cloud": true,
}

// checkWords fails the test for a state or reason code in the page's
// visible text, and on a Chinese page for any English word that is not a
// name.
func (b *tab) checkWords(page, lang string) {
	b.t.Helper()
	text := eval[string](b, "visible text", visibleTextJS)
	if codes := codeWord.FindAllString(text, -1); len(codes) > 0 {
		b.t.Errorf("%s (%s) shows codes %q in its text:\n%s", page, lang, slices.Compact(codes), tail(text, 1500))
	}
	if lang != "zh-CN" {
		return
	}
	var english []string
	for _, w := range latinWord.FindAllString(text, -1) {
		w = strings.TrimRight(w, ".:")
		if zhAllowed[w] || strings.ContainsAny(w, "0123456789") || strings.HasPrefix(w, "http") || strings.HasPrefix(w, "/") {
			continue
		}
		english = append(english, w)
	}
	if len(english) > 0 {
		b.t.Errorf("%s in Chinese shows English words %q:\n%s", page, slices.Compact(english), tail(text, 1500))
	}
}

// browserLayout: every page, at 1280 and 390 px, in English
// and Chinese, scrolls not sideways, clips nothing, keeps every word of a
// table cell whole, and shows no English code (nor, in Chinese, any
// English label). The screenshots of the dashboard, a paper-out task, a
// timed-out task, a failover ticket and the task list are saved in both
// languages at both sizes.
func browserLayout(t *testing.T, s *browserSuite) {
	a := layoutAgent(t, s)
	pages := []struct{ path, ready, shot string }{
		{"/", `[data-printer="kitchen"]`, "dashboard"},
		{"/tasks", `table#tasks`, "tasks"},
		{"/tasks/" + layoutPrinted, `[data-task-state]`, "task-printed"},
		{"/tasks/" + layoutFailover, `[data-task-state]`, "task-failover"},
		{"/tasks/" + layoutPaperOut, `[data-task-state]`, "task-paper-out"},
		{"/tasks/" + layoutTimedOut, `[data-task-state]`, "task-timed-out"},
		{"/tasks/" + layoutTimedOut + "/retry", `form#confirm`, ""},
		{"/tasks/" + layoutPrinted + "/reprint", `form#confirm`, "reprint-confirm"},
		{"/printers", `[data-printer="kitchen"]`, ""},
		{"/pairing", `main`, ""},
		{"/logs", `#log-lines`, ""},
	}
	for _, size := range []struct{ w, h int }{{1280, 800}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			b := s.openTab(t, a.base, size.w, size.h)
			b.login(browserPIN)
			for _, lang := range []string{"en", "zh-CN"} {
				b.open("/lang?to=" + lang + "&back=/")
				for _, p := range pages {
					b.open(p.path)
					b.do(p.path, chromedp.WaitReady(chromedp.CSS(p.ready)))
					if got := eval[string](b, "lang", `document.documentElement.lang`); got != lang {
						t.Fatalf("%s is in %q, want %s", p.path, got, lang)
					}
					b.checkLayout(p.path)
					b.checkWords(p.path, lang)
					if p.shot != "" {
						b.fullScreenshot(p.shot + "-" + lang)
					}
				}
			}
		})
	}
}

// browserErrorPage: a PIN file the agent cannot read (a
// directory in its place here: the tests run as root, who reads any
// file) gives the login an error page in the page's own layout and
// language, saying what is wrong and what to do, on a phone too.
func browserErrorPage(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	pin := web.PINPath(a.dataDir)
	if err := os.Rename(pin, pin+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(pin, 0o700); err != nil {
		t.Fatal(err)
	}
	b := s.openTab(t, a.base, 390, 844)
	for _, lang := range []string{"en", "zh-CN"} {
		b.open("/lang?to=" + lang + "&back=/login")
		b.do("the login form", chromedp.WaitVisible(chromedp.CSS("form#login")),
			chromedp.SetValue(chromedp.CSS(`form#login input[name=pin]`), browserPIN))
		b.clickAndWait(`form#login button[type=submit]`)
		b.do("the error page", chromedp.WaitVisible(chromedp.CSS("#problem")))
		text := eval[string](b, "the error page", `document.querySelector("#problem").innerText`)
		for _, want := range map[string][]string{
			"en":    {"cannot read the manager PIN file " + pin, "What to do:", "printgate pin set", "Logs page"},
			"zh-CN": {"无法读取管理员 PIN 文件 " + pin, "处理方法：", "printgate pin set"},
		}[lang] {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the error page lacks %q:\n%s", lang, want, text)
			}
		}
		if strings.Contains(text, "internal error") || strings.Contains(text, "is a directory") {
			t.Errorf("%s: the error page shows the raw error:\n%s", lang, text)
		}
		b.checkLayout("/login (error)")
		b.checkWords("/login (error)", lang)
		b.fullScreenshot("error-pin-unreadable-" + lang)
	}
}

// browserTaskWords: the task pages speak to a manager: a
// paper-out wait says what to do and that the ticket prints by itself, a
// timed-out ticket says it was NOT printed, the printer's status bytes
// are behind the details toggle, Reprint and Retry each say when to use
// them, the tries agree with the timeline, and a ticket printed on the
// backup does not say it is printing.
func browserTaskWords(t *testing.T, s *browserSuite) {
	a := layoutAgent(t, s)
	b := s.openTab(t, a.base, 1280, 800)
	b.login(browserPIN)
	say := `document.querySelector("#say").innerText`

	b.open("/tasks/" + layoutPaperOut)
	b.waitJS("the paper-out sentence", say+`.includes("Printer bar is out of paper. Load paper: 1 waiting ticket prints by itself.")`)
	if !eval[bool](b, "details closed", `!!document.querySelector("details#details") && !document.querySelector("details#details").open`) {
		b.fail("the technical details are not behind a closed toggle")
	}
	text := eval[string](b, "visible text", `document.body.innerText`)
	if strings.Contains(text, "1=") || strings.Contains(text, "PAPER_OUT") {
		t.Errorf("the status bytes or the code show before the toggle opens:\n%s", text)
	}
	b.do("open the details", chromedp.Click(chromedp.CSS("details#details summary")))
	if d := eval[string](b, "details", `document.querySelector("details#details").innerText`); !strings.Contains(d, "PAPER_OUT") || !strings.Contains(d, "1=") {
		t.Errorf("the details lack the reason code and the status bytes: %q", d)
	}

	b.open("/tasks/" + layoutTimedOut)
	b.waitJS("the timed-out sentence", say+`.includes("NOT printed")`)
	if got := eval[string](b, "say", say); !strings.Contains(got, "Reprint it, or tell the kitchen.") || !strings.Contains(got, "front") {
		t.Errorf("timed out: %q", got)
	}
	for _, id := range []string{"retry", "reprint"} {
		line := eval[string](b, id+" hint", `(document.querySelector("a#`+id+`").parentElement.querySelector(".muted") || {innerText: ""}).innerText`)
		if len(line) < 20 {
			t.Errorf("%s has no line saying when to use it: %q", id, line)
		}
	}
	tries := eval[string](b, "tries", `document.querySelector('[data-field="tries"]').innerText`)
	sends := eval[int](b, "sends", `document.querySelectorAll('#timeline li[data-state="SENDING"]').length`)
	if tries != fmt.Sprint(sends) {
		t.Errorf("Tries %s beside %d sends in the timeline", tries, sends)
	}

	b.open("/tasks/" + layoutFailover)
	b.waitJS("printed", taskStateJS+` === "PRINTED"`)
	text = eval[string](b, "visible text", `document.body.innerText`)
	if strings.Contains(text, "Printing on") || !strings.Contains(text, "Printed on bar, the backup of kitchen.") {
		t.Errorf("a ticket printed on the backup reads:\n%s", text)
	}
	if p := eval[string](b, "preview", `document.querySelector("#preview").innerText`); !strings.Contains(p, "FAILOVER") {
		t.Errorf("the preview lacks the FAILOVER banner: %q", p)
	}

	// The dashboard: kitchen has a backup (not "Failover off"), bar's
	// sentence says what to do, the Agent card lists what needs
	// attention, the timed-out alert says NOT printed.
	b.open("/")
	b.waitJS("bar's sentence", `(document.querySelector('[data-printer="bar"] [data-field="say"]') || {innerText: ""}).innerText.includes("Load paper")`)
	kitchen := eval[string](b, "kitchen", `document.querySelector('[data-printer="kitchen"]').innerText`)
	if !strings.Contains(kitchen, "bar") || strings.Contains(kitchen, "off") {
		t.Errorf("kitchen's card: %q", kitchen)
	}
	agent := eval[string](b, "agent card", `document.querySelector("#health").innerText`)
	if !strings.Contains(agent, layoutTimedOut) || !strings.Contains(agent, "NOT printed") {
		t.Errorf("the Agent card does not list the timed-out ticket: %q", agent)
	}
	alerts := eval[string](b, "alerts", `document.querySelector("#alerts").innerText`)
	if !strings.Contains(alerts, "Task "+layoutTimedOut+" was NOT printed") {
		t.Errorf("the alerts: %q", alerts)
	}
}

// browserReprintWhileFailbackPending: kitchen failed over to
// bar and is ready again, failback pending. A reprint of a kitchen ticket
// prints on bar (tickets keep to the backup until failback, docs/DESIGN.md,
// "Dispatch": failover), and the confirm page says so before the manager confirms,
// naming failback_after.
func browserReprintWhileFailbackPending(t *testing.T, s *browserSuite) {
	a := layoutAgent(t, s)
	if err := a.printers["bar"].SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	a.printerState(t, "bar", "READY")
	b := s.openTab(t, a.base, 390, 844)
	b.login(browserPIN)
	b.open("/tasks/" + layoutPrinted + "/reprint")
	where := eval[string](b, "where", `(document.querySelector("#where") || {innerText: ""}).innerText`)
	if !strings.Contains(where, "It prints on bar, marked FAILOVER, not on kitchen") || !strings.Contains(where, "failback_after") {
		t.Fatalf("the reprint's confirm page says %q", where)
	}
	kitchenBefore := len(a.printers["kitchen"].Tickets())
	b.clickAndWait(`form#confirm button[type=submit]`)
	a.waitTicket(t, "bar", "REPRINT", "FAILOVER", "TICKET "+layoutPrinted)
	if n := len(a.printers["kitchen"].Tickets()); n != kitchenBefore {
		t.Errorf("kitchen printed %d tickets; the page said bar", n-kitchenBefore)
	}
}

// browserAddByAddress: a printer the scan cannot find (another network,
// a PC with no private address) is added by typing its address on the
// printers page. The agent tests it first: an address where nothing
// answers comes back with the reason and changes nothing; the emulated
// printer on loopback is tested, shown as answering, added under the name
// typed, and prints a ticket.
func browserAddByAddress(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	counter := printertest.New(printertest.Options{Name: "counter", Model: printertest.ModelEpson})
	if err := counter.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { counter.Close() })
	a.printers["counter"] = counter

	b := s.openTab(t, a.base, 390, 844)
	b.login(browserPIN)
	typeAddr := func(addr string) {
		b.open("/printers")
		b.do("type the address", chromedp.WaitVisible(chromedp.CSS("form#add-by-address")),
			chromedp.SetValue(chromedp.CSS(`form#add-by-address input[name=addr]`), addr))
		b.clickAndWait(`form#add-by-address button[type=submit]`)
	}

	dead := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	typeAddr(dead)
	b.do("the refusal", chromedp.WaitVisible(chromedp.CSS("#flash")))
	if msg := eval[string](b, "the flash", `document.querySelector("#flash").innerText`); !strings.Contains(msg, "Nothing answers at "+dead) {
		t.Errorf("an address where nothing answers: flash %q", msg)
	}
	if eval[bool](b, "the add form?", `!!document.querySelector("form#confirm")`) {
		t.Error("an address where nothing answers was offered for adding")
	}

	typeAddr(counter.Addr())
	b.do("the tested add form", chromedp.WaitVisible(chromedp.CSS("#add-tested")))
	if msg := eval[string](b, "the test's result", `document.querySelector("#add-tested").innerText`); !strings.Contains(msg, counter.Addr()+" answers as a receipt printer") {
		t.Errorf("the add form says %q of the emulator's test", msg)
	}
	if u := eval[string](b, "the URL", `document.querySelector("#add-url").innerText`); u != "tcp://"+counter.Addr() {
		t.Errorf("the add form's URL %q, want tcp://%s", u, counter.Addr())
	}
	b.noHorizontalScroll("/printers/test-address")
	b.screenshot("printers-add-by-address")
	b.do("name it", chromedp.SetValue(chromedp.CSS(`form#confirm input[name=name]`), "counter"))
	b.clickAndWait(`form#confirm button[type=submit]`)
	b.do("the flash", chromedp.WaitVisible(chromedp.CSS("#flash")))
	b.open("/printers")
	b.do("counter listed", chromedp.WaitVisible(chromedp.CSS(`[data-printer="counter"]`)))
	a.submit(t, "ADDR1_v1", "counter", "")
	a.waitTicket(t, "counter", "TICKET ADDR1_v1")
}
