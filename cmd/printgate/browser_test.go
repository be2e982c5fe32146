package main

// Browser tests of the manager page (issue 11): the real binary, emulated
// printers, and Debian's chromium driven by chromedp. They rely on the DOM
// hooks of the page contract (web-contract: ids, data-* attributes) and
// nothing else of the markup. Run one with
//   go test -run 'TestBrowser/Reprint' ./cmd/printgate
// Screenshots go to a temp dir the log names, or to $PRINTGATE_SCREENSHOTS.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

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

// browserLayout: at 390 px no page scrolls sideways; screenshots of the
// dashboard and a task page at 1280×800 and 390×844.
func browserLayout(t *testing.T, s *browserSuite) {
	a := s.startPageAgent(t, agentSetup{pin: browserPIN})
	// A ticket as a POS sends it, so the screenshots show the paper
	// preview with sizes, a QR code and a barcode.
	a.submitDoc(t, "ORD20261130-0042_KITCHEN_v1", "kitchen", "", []any{
		map[string]any{"text": "TABLE 12", "align": "center", "size": "2x2", "bold": true},
		map[string]any{"text": "Kung pao chicken", "right": "x2"},
		map[string]any{"text": "Fried rice, no egg", "right": "x1"},
		map[string]any{"rule": "-"},
		map[string]any{"qr": "https://example.com/o/42", "size": 4},
		map[string]any{"barcode": "ORD20261130-0042", "type": "CODE128"},
		map[string]any{"text": "TICKET ORD20261130-0042_KITCHEN_v1"},
		map[string]any{"cut": "partial"},
	})
	a.waitState(t, "ORD20261130-0042_KITCHEN_v1", "PRINTED")
	pages := []struct{ path, ready, shot string }{
		{"/", `[data-printer="kitchen"]`, "dashboard"},
		{"/tasks", `table#tasks`, ""},
		{"/tasks/ORD20261130-0042_KITCHEN_v1", `[data-task-state]`, "task"},
		{"/printers", `[data-printer="kitchen"]`, ""},
		{"/logs", `#log-lines`, ""},
	}
	for _, size := range []struct{ w, h int }{{1280, 800}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			b := s.openTab(t, a.base, size.w, size.h)
			b.login(browserPIN)
			for _, p := range pages {
				b.open(p.path)
				b.do(p.path, chromedp.WaitReady(chromedp.CSS(p.ready)))
				if size.w == 390 {
					b.noHorizontalScroll(p.path)
				}
				if p.shot == "task" {
					// The QR code and the barcode are images the page's
					// CSP must let through (data: URIs), drawn at a size.
					b.waitJS("preview images loaded", `(() => { const im = [...document.querySelectorAll('#preview img')]; return im.length == 2 && im.every(i => i.complete && i.naturalWidth > 0); })()`)
					if txt := eval[string](b, "preview text", `document.querySelector('#preview').innerText`); !strings.Contains(txt, "TABLE 12") || !strings.Contains(txt, "Kung pao chicken") {
						t.Errorf("preview text %q lacks the ticket's lines", txt)
					}
				}
				if p.shot != "" {
					b.screenshot(p.shot)
				}
			}
		})
	}
}
