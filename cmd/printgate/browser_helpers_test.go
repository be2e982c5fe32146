package main

// The harness of the browser tests (browser_test.go): the real printgate
// binary with emulated printers, driven through Debian's chromium with
// chromedp, headless and without sandbox.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"printgate/agent/web"
	"printgate/drivers/printertest"
)

const (
	// browserStep bounds every chromedp action, so a page that never shows
	// what a test waits for fails the test instead of hanging it.
	browserStep = 20 * time.Second
	// browserLife bounds one browser (and so one test) as a whole.
	browserLife = 2 * time.Minute
	// browserToken is the agents' api_token in the browser tests.
	browserToken = "browser-test-token-0123456789abcdef"
	// browserPIN is the manager PIN the tests log in with.
	browserPIN = "482916"
)

// chromePath finds the browser: $PRINTGATE_CHROME, else chromium,
// chromium-browser or google-chrome on PATH. Without one the test skips,
// except in CI (CI=true), where a missing browser must fail rather than
// let the browser tests pass by not running; .ci/run installs chromium.
func chromePath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PRINTGATE_CHROME"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("PRINTGATE_CHROME=%q: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium, chromium-browser or google-chrome on PATH (set PRINTGATE_CHROME, or apt-get install chromium; .ci/run installs it)"
	// CI installs chromium for the Linux run, not for the Windows build
	// under Wine (make test-windows, with CI set too).
	if os.Getenv("CI") == "true" && runtime.GOOS == "linux" {
		t.Fatalf("browser tests cannot run in CI: %s", msg)
	}
	t.Skip("browser tests skipped: " + msg)
	return ""
}

// browserSuite is what the browser tests share: the binary, built once,
// the browser and the folder the screenshots go to.
type browserSuite struct {
	bin    string
	chrome string
	shots  string
}

// newBrowserSuite builds the binary and finds the browser. Screenshots go
// to $PRINTGATE_SCREENSHOTS or a new temp dir that outlives the test (it
// is for people to look at), whose path is logged.
func newBrowserSuite(t *testing.T) *browserSuite {
	t.Helper()
	chrome := chromePath(t)
	shots := os.Getenv("PRINTGATE_SCREENSHOTS")
	if shots == "" {
		var err error
		if shots, err = os.MkdirTemp("", "printgate-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("browser: %s; screenshots in %s", chrome, shots)
	return &browserSuite{bin: buildPrintgate(t), chrome: chrome, shots: shots}
}

// pageAgent is one run of the real binary serving the manager page, with
// its emulated printers: kitchen (bar is its backup), bar and front.
type pageAgent struct {
	base     string
	dataDir  string
	proc     *agentProc
	printers map[string]*printertest.Printer
}

// agentSetup chooses how a test's agent starts.
type agentSetup struct {
	// pin is set as the manager PIN before the agent starts; "" leaves
	// the agent at its first run, with no PIN.
	pin string
	// printerLines are config lines added to a printer's [[printers]]
	// table, by printer name.
	printerLines map[string]string
}

// startPageAgent writes a config for the three emulated printers on
// 127.0.0.1 and runs the binary until the test ends. On failure the
// agent's log is shown.
func (s *browserSuite) startPageAgent(t *testing.T, setup agentSetup) *pageAgent {
	t.Helper()
	dir := t.TempDir()
	a := &pageAgent{dataDir: filepath.Join(dir, "data"), printers: map[string]*printertest.Printer{}}
	port := freePort(t)
	a.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[log]\nlevel = \"debug\"\n", a.dataDir, port, browserToken)
	for _, name := range []string{"kitchen", "bar", "front"} {
		p := printertest.New(printertest.Options{Name: name, Model: printertest.ModelEpson})
		if err := p.ListenTCP(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		a.printers[name] = p
		fmt.Fprintf(&cfg, "[[printers]]\nname = %q\nurl = \"tcp://%s\"\n", name, p.Addr())
		if name == "kitchen" {
			cfg.WriteString("backup = \"bar\"\n")
		}
		cfg.WriteString(setup.printerLines[name])
	}
	config := filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if setup.pin != "" {
		if err := web.SetPIN(a.dataDir, setup.pin); err != nil {
			t.Fatal(err)
		}
	}
	a.proc = startAgent(t, s.bin, config, a.base)
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", tail(a.proc.logs.String(), 8000))
		}
	})
	return a
}

// setupCodeLine is the line `printgate run` prints at a first start.
var setupCodeLine = regexp.MustCompile(`first-run setup code: (\d{4}-\d{4})`)

// setupCode is the first-run setup code the agent printed at start, as the
// manager copies it from the terminal.
func (a *pageAgent) setupCode(t *testing.T) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := setupCodeLine.FindStringSubmatch(a.proc.logs.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent printed no first-run setup code:\n%s", tail(a.proc.logs.String(), 4000))
		}
	}
}

// stop ends the agent with SIGTERM, then SIGKILL if it lingers.
func (a *pageAgent) stop() {
	if a.proc.cmd.ProcessState != nil {
		return
	}
	a.proc.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { a.proc.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		a.proc.cmd.Process.Kill()
		<-done
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// submit posts a one-line ticket "TICKET <taskNo>" for printer through the
// API with the token; timeout ("" for the default) is the task's deadline.
func (a *pageAgent) submit(t *testing.T, taskNo, printer, timeout string) {
	t.Helper()
	a.submitDoc(t, taskNo, printer, timeout, []any{map[string]any{"text": "TICKET " + taskNo}, map[string]any{"cut": "partial"}})
}

// submitDoc posts a ticket document made of lines for printer through the
// API with the token.
func (a *pageAgent) submitDoc(t *testing.T, taskNo, printer, timeout string, lines []any) {
	t.Helper()
	task := map[string]any{"task_no": taskNo, "printer": printer, "document": map[string]any{"lines": lines}}
	if timeout != "" {
		task["timeout"] = timeout
	}
	body, _ := json.Marshal(task)
	req, _ := http.NewRequest("POST", a.base+"/api/v1/tasks", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+browserToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("submit %s: %v", taskNo, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit %s: HTTP %d", taskNo, resp.StatusCode)
	}
}

// waitState waits until the API shows taskNo in state.
func (a *pageAgent) waitState(t *testing.T, taskNo, state string) taskState {
	t.Helper()
	return waitState(t, a.base, browserToken, taskNo, state)
}

// waitTicket waits until printer has cut a ticket holding every one of
// texts, and returns it.
func (a *pageAgent) waitTicket(t *testing.T, printer string, texts ...string) printertest.Ticket {
	t.Helper()
	p := a.printers[printer]
	ctx, cancel := context.WithTimeout(context.Background(), browserStep)
	defer cancel()
	for n := 1; ; n++ {
		tickets, err := p.WaitTickets(ctx, n)
		if err != nil {
			var got []string
			for _, tk := range p.Tickets() {
				got = append(got, tk.Text())
			}
			t.Fatalf("no ticket holding %q on %s: %v; it printed %q", texts, printer, err, got)
		}
		last := tickets[n-1]
		all := true
		for _, s := range texts {
			all = all && last.Contains(s)
		}
		if all {
			return last
		}
	}
}

// tab is one browser, with one tab, for one test.
type tab struct {
	t     *testing.T
	s     *browserSuite
	ctx   context.Context
	base  string
	w, h  int
	chlog *lockedBuffer
}

// openTab starts a browser of its own (its own profile, so no cookie
// crosses tests) with a window and a viewport of w×h CSS pixels, for
// pages under base. It closes when the test ends.
func (s *browserSuite) openTab(t *testing.T, base string, w, h int) *tab {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(s.chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(w, h),
	}
	// The first action starts the browser: no step timeout on it (it
	// would end the browser), browserLife bounds it. A start that fails
	// is tried again, twice, each time in a new profile: on a loaded CI
	// machine Debian's chromium once crashed at start (crashpad, before
	// any page), which says nothing of the page under test.
	var ctx context.Context
	var chlog *lockedBuffer
	for try := 1; ; try++ {
		life, cancelLife := context.WithTimeout(context.Background(), browserLife)
		alloc, cancelAlloc := chromedp.NewExecAllocator(life, append(opts, chromedp.UserDataDir(t.TempDir()))...)
		log := &lockedBuffer{}
		c, cancelCtx := chromedp.NewContext(alloc, chromedp.WithErrorf(func(f string, args ...any) {
			fmt.Fprintf(log, f+"\n", args...)
		}))
		err := chromedp.Do(c)
		if err == nil {
			t.Cleanup(func() {
				cancelCtx()
				cancelAlloc()
				cancelLife()
			})
			ctx, chlog = c, log
			break
		}
		cancelCtx()
		cancelAlloc()
		cancelLife()
		if try == 3 {
			t.Fatalf("start %s (%d tries): %v\n%s", s.chrome, try, err, log.String())
		}
		t.Logf("start %s failed (try %d), trying again: %v", s.chrome, try, err)
	}
	tb := &tab{t: t, s: s, ctx: ctx, base: base, w: w, h: h, chlog: chlog}
	tb.do("set the viewport", chromedp.EmulateViewport(int64(w), int64(h)))
	return tb
}

// do runs steps, each run bounded by browserStep, and fails the test with
// what the page shows when one fails.
func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

// fail reports what the page was showing, with a screenshot, and stops
// the test.
func (b *tab) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	shot := b.screenshot("FAILED-" + strings.ReplaceAll(b.t.Name(), "/", "_"))
	b.t.Fatalf("%s\npage %s (screenshot %s) shows:\n%s", fmt.Sprintf(format, args...), loc, shot, tail(text, 3000))
}

// eval evaluates a JavaScript expression in the page, awaiting a promise.
func eval[T any](b *tab, what, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("%s: %v", what, err)
	}
	return v
}

// open navigates to path (under the agent's base) and waits for its body.
func (b *tab) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// path is the path of the page shown.
func (b *tab) path() string {
	b.t.Helper()
	return eval[string](b, "location", `location.pathname`)
}

// clickAndWait clicks sel (a submit button or a link) and waits until the
// page it leads to has loaded: a marker set on the current page is gone and the
// new document is complete. The marker tells a reloaded page (the same
// URL, such as a failed login) from the one clicked on.
func (b *tab) clickAndWait(sel string) {
	b.t.Helper()
	eval[chromedp.Void](b, "mark the page", `window.__pgOld = true`)
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	b.waitNewPage("after clicking " + sel)
}

// waitNewPage waits for the page marked by clickAndWait to be replaced.
func (b *tab) waitNewPage(what string) {
	b.t.Helper()
	deadline := time.Now().Add(browserStep)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pgOld !== true && document.readyState === "complete"`))
		cancel()
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			b.fail("%s: no new page within %s (last error: %v)", what, browserStep, err)
		}
		// The page is in another process: nothing to wait on but polling.
		time.Sleep(100 * time.Millisecond)
	}
}

// waitJS waits until the JavaScript expression is truthy on the current
// page, without reloading it.
func (b *tab) waitJS(what, expr string) {
	b.t.Helper()
	b.do(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserStep))(ctx, t)
		return err
	}))
}

// screenshot saves what the viewport shows as NAME-WxH.png in the
// screenshots folder and returns the file's path ("" if it failed).
func (b *tab) screenshot(name string) string {
	b.t.Helper()
	return b.saveShot(name, chromedp.CaptureScreenshot())
}

// saveShot takes the screenshot capture makes and saves it as NAME-WxH.png
// in the screenshots folder; it returns the file's path ("" if it failed).
func (b *tab) saveShot(name string, capture chromedp.Action[[]byte]) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	png, err := chromedp.Run(ctx, capture)
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.s.shots, fmt.Sprintf("%s-%dx%d.png", name, b.w, b.h))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	b.t.Logf("screenshot %s", path)
	return path
}

// fetchStatus sends a request from the page's own JavaScript (its cookies
// go with it, nothing else is added) and returns the HTTP status; a
// redirect counts as its status code 0 ("opaqueredirect") so it is not
// followed.
func (b *tab) fetchStatus(method, path string, headers map[string]string) int {
	b.t.Helper()
	if headers == nil {
		headers = map[string]string{}
	}
	h, _ := json.Marshal(headers)
	expr := fmt.Sprintf(`fetch(%q, {method: %q, headers: %s, credentials: "same-origin", redirect: "manual"}).then(r => r.status)`, path, method, h)
	return eval[int](b, method+" "+path, expr)
}

// login signs in with pin on /login and then opens the dashboard.
func (b *tab) login(pin string) {
	b.t.Helper()
	b.open("/login")
	b.do("fill in the PIN",
		chromedp.WaitVisible(chromedp.CSS("form#login")),
		chromedp.SetValue(chromedp.CSS(`form#login input[name=pin]`), pin),
	)
	b.clickAndWait(`form#login button[type=submit]`)
	if p := b.path(); p == "/login" {
		b.fail("login with the right PIN stayed on /login")
	}
	b.open("/")
	b.do("the dashboard", chromedp.WaitVisible(chromedp.CSS(`[data-printer="kitchen"]`)))
}

// noHorizontalScroll fails the test if the page is wider than the window.
func (b *tab) noHorizontalScroll(page string) {
	b.t.Helper()
	type widths struct{ Scroll, Inner int }
	w := eval[widths](b, "widths", `({Scroll: document.scrollingElement.scrollWidth, Inner: window.innerWidth})`)
	if w.Inner != b.w {
		b.t.Errorf("%s: the window is %d px wide, want %d", page, w.Inner, b.w)
	}
	if w.Scroll > w.Inner {
		b.t.Errorf("%s scrolls sideways at %d px: it is %d px wide", page, w.Inner, w.Scroll)
		b.screenshot("HSCROLL-" + strings.Trim(strings.ReplaceAll(page, "/", "_"), "_"))
	}
}

// printerState waits until the API shows printer in state.
func (a *pageAgent) printerState(t *testing.T, printer, state string) {
	t.Helper()
	deadline := time.Now().Add(browserStep)
	var last string
	for {
		req, _ := http.NewRequest("GET", a.base+"/api/v1/printers", nil)
		req.Header.Set("Authorization", "Bearer "+browserToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var v struct {
				Printers []struct {
					Name, State string
					FailoverTo  string `json:"failover_to"`
				}
			}
			json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			for _, p := range v.Printers {
				if p.Name == printer {
					last = p.State + " failover_to=" + p.FailoverTo
					if p.State == state || (strings.HasPrefix(state, "→") && p.FailoverTo == state[len("→"):]) {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("printer %s never showed %s (last: %s)", printer, state, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fullScreenshot saves the whole page, not only the viewport, as
// NAME-WxH.png in the screenshots folder.
func (b *tab) fullScreenshot(name string) string {
	b.t.Helper()
	return b.saveShot(name, chromedp.FullScreenshot(100))
}

// layoutJS lists what breaks the page on a small screen: the page
// scrolling sideways, an element reaching past the window's edges or
// clipping its content sideways (a preview cut off with no sign it
// scrolls), and a table cell, definition or badge narrower than a word it
// holds (a column wrapped one letter per line), or any word broken across
// lines. Words in .break, .taskno and .long elements (task numbers,
// addresses, sentences naming a file) may break by design.
const layoutJS = `(() => {
  const out = [];
  const W = window.innerWidth;
  const se = document.scrollingElement;
  if (se.scrollWidth > W) out.push("the page is " + se.scrollWidth + " px wide in a " + W + " px window");
  const name = el => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    if (typeof el.className === "string" && el.className.trim()) s += "." + el.className.trim().split(/\s+/).join(".");
    const txt = (el.innerText || "").trim().replace(/\s+/g, " ").slice(0, 50);
    return s + (txt ? " (" + txt + ")" : "");
  };
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right > W + 0.5 || r.left < -0.5) out.push(name(el) + " reaches past the window: " + Math.round(r.left) + ".." + Math.round(r.right) + " of " + W + " px");
    const cs = getComputedStyle(el);
    if (cs.overflowX !== "visible" && el.scrollWidth > el.clientWidth + 1) out.push(name(el) + " clips its content sideways: " + el.scrollWidth + " px in " + el.clientWidth);
  }
  const canvas = document.createElement("canvas").getContext("2d");
  for (const el of document.querySelectorAll("td, th, dd, .badge, button, .button")) {
    if (el.getBoundingClientRect().width === 0) continue;
    const cs = getComputedStyle(el);
    const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const host = n.parentElement;
      if (host.closest(".break, .taskno, pre, code")) continue;
      canvas.font = getComputedStyle(host).font;
      for (const word of n.data.split(/[\s\u3000-\u9fff\uff00-\uffef]+/)) {
        if (!word) continue;
        const w = canvas.measureText(word).width;
        if (w > room + 1) out.push(name(el) + " is " + Math.round(room) + " px wide, narrower than its word " + JSON.stringify(word) + " (" + Math.round(w) + " px)");
      }
    }
  }
  // A word split across two lines ("Pa / per out"), outside the places
  // where long codes may break by design.
  const body = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let n = body.nextNode(); n; n = body.nextNode()) {
    const host = n.parentElement;
    if (!host || host.closest(".break, .taskno, .long, pre, code, #preview, .log, select, script, style")) continue;
    const re = /[^\s\u3000-\u9fff\uff00-\uffef\/-]{2,}/g;
    for (let m = re.exec(n.data); m; m = re.exec(n.data)) {
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) out.push(name(host) + " breaks the word " + JSON.stringify(m[0]) + " across lines");
    }
  }
  return [...new Set(out)].slice(0, 15);
})()`

// visibleTextJS is the text a person reads on the page, without the
// parts that are not the page's own words: the ticket preview, commands
// and config lines, log lines, the language switch and what is marked
// translate="no" (a printer's own model string, the version).
const visibleTextJS = `(() => {
  const skip = [...document.querySelectorAll("#preview, pre, code, .cmd, #log-lines, .langs, select, input, [translate=no]")];
  const was = skip.map(el => el.hidden);
  skip.forEach(el => el.hidden = true);
  const text = document.body.innerText;
  skip.forEach((el, i) => el.hidden = was[i]);
  return text;
})()`

// checkLayout fails the test for everything layoutJS finds on page.
func (b *tab) checkLayout(page string) {
	b.t.Helper()
	b.waitJS("the preview fitted", `!document.getElementById("preview") || document.getElementById("preview").getAttribute("data-fitted") === "1"`)
	if problems := eval[[]string](b, "layout", layoutJS); len(problems) > 0 {
		shot := b.fullScreenshot("LAYOUT-" + strings.Trim(strings.ReplaceAll(page, "/", "_"), "_"))
		b.t.Errorf("%s at %d px (screenshot %s):\n  %s", page, b.w, shot, strings.Join(problems, "\n  "))
	}
}
