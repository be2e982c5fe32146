package fleet_test

// The fleet page in Debian's chromium, driven with chromedp as the agent's
// browser suite does (cmd/printgate/browser_helpers_test.go, whose skip
// rule and start retries this copies in small).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"printgate/sync/wire"
)

const (
	// browserStep bounds every chromedp action.
	browserStep = 20 * time.Second
	// browserLife bounds one browser as a whole.
	browserLife = time.Minute
)

// chromePath finds the browser: $PRINTGATE_CHROME, else chromium,
// chromium-browser or google-chrome on PATH. Without one the test skips,
// except in CI (CI=true on Linux), where a missing browser fails.
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
	if os.Getenv("CI") == "true" && runtime.GOOS == "linux" {
		t.Fatalf("browser tests cannot run in CI: %s", msg)
	}
	t.Skip("browser tests skipped: " + msg)
	return ""
}

// tab is one browser with one tab, w×h CSS pixels, for pages under base.
type tab struct {
	t     *testing.T
	ctx   context.Context
	base  string
	w, h  int
	shots string
}

func openTab(t *testing.T, chrome, base, shots string, w, h int) *tab {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-default-apps", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("password-store", "basic"), chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(w, h),
	}
	// A start that fails is tried again, twice, each in a new profile:
	// Debian's chromium once crashed at start on a loaded machine.
	for try := 1; ; try++ {
		life, cancelLife := context.WithTimeout(context.Background(), browserLife)
		alloc, cancelAlloc := chromedp.NewExecAllocator(life, append(opts, chromedp.UserDataDir(t.TempDir()))...)
		c, cancelCtx := chromedp.NewContext(alloc)
		err := chromedp.Do(c)
		if err == nil {
			t.Cleanup(func() {
				cancelCtx()
				cancelAlloc()
				cancelLife()
			})
			tb := &tab{t: t, ctx: c, base: base, w: w, h: h, shots: shots}
			tb.do("set the viewport", chromedp.EmulateViewport(int64(w), int64(h)))
			return tb
		}
		cancelCtx()
		cancelAlloc()
		cancelLife()
		if try == 3 {
			t.Fatalf("start %s (%d tries): %v", chrome, try, err)
		}
		t.Logf("start %s failed (try %d), trying again: %v", chrome, try, err)
	}
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

func (b *tab) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	shot := b.screenshot("FAILED")
	b.t.Fatalf("%s\npage %s (screenshot %s) shows:\n%s", fmt.Sprintf(format, args...), loc, shot, text)
}

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

func (b *tab) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// clickAndWait clicks sel and waits until the page it leads to has loaded
// (a marker set on the current page is gone).
func (b *tab) clickAndWait(sel string) {
	b.t.Helper()
	eval[chromedp.Void](b, "mark the page", `window.__pgOld = true`)
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	deadline := time.Now().Add(browserStep)
	for {
		// Each try is its own evaluation: one that runs while the page
		// navigates fails, and the next one sees the new page.
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pgOld !== true && document.readyState === "complete"`))
		cancel()
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			b.fail("no new page within %s after clicking %s (last error: %v)", browserStep, sel, err)
		}
		// The page is in another process: nothing to wait on but polling.
		time.Sleep(100 * time.Millisecond)
	}
}

// waitJS waits until the expression is truthy on the current page.
func (b *tab) waitJS(what, expr string) {
	b.t.Helper()
	b.do(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserStep))(ctx, t)
		return err
	}))
}

func (b *tab) screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.shots, fmt.Sprintf("%s-%s-%dx%d.png", strings.ReplaceAll(b.t.Name(), "/", "_"), name, b.w, b.h))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return ""
	}
	b.t.Logf("screenshot %s", path)
	return path
}

// noHorizontalScroll fails the test if the page is wider than the window.
func (b *tab) noHorizontalScroll(page string) {
	b.t.Helper()
	type widths struct{ Scroll, Inner int }
	w := eval[widths](b, "widths", `({Scroll: document.scrollingElement.scrollWidth, Inner: window.innerWidth})`)
	if w.Scroll > w.Inner {
		b.screenshot("HSCROLL")
		b.t.Errorf("%s scrolls sideways at %d px: it is %d px wide", page, w.Inner, w.Scroll)
	}
}

// TestBrowser signs in through the page in chromium, at 1280 and 390 px,
// in English and in Chinese (chosen with the page's switch): the
// connected store shows online, its timed-out job in red (a computed red,
// not only a class), a second one the agent reports later appears
// without a reload, the store's log opened from its card shows a line
// its agent writes and then the agent's refusal, nothing scrolls sideways, and a pairing code opened
// from its QR URL is approved for a store, so the agent's pairing gets
// its token.
func TestBrowser(t *testing.T) {
	chrome := chromePath(t)
	shots := os.Getenv("PRINTGATE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	r := startHub(t)
	a := r.connect(t, "s1")
	a.timedOut(t, "T-1")
	for _, tc := range []struct {
		w, h                   int
		lang                   string
		timedOut, approved, on string
		live, refused          string
	}{
		{1280, 900, "en", "Timed out: not printed", "approved for s2", "Online", "Live: new lines appear as the agent writes them.", "The store's agent refused to send its log"},
		{390, 844, "zh-CN", "已超时：未打印", "已批准给 s2", "在线", "实时：门店程序写入的新日志会自动出现。", "门店程序拒绝发送日志"},
	} {
		t.Run(fmt.Sprintf("%dpx-%s", tc.w, tc.lang), func(t *testing.T) {
			b := openTab(t, chrome, r.base, shots, tc.w, tc.h)
			b.open("/fleet/")
			b.waitJS("the sign-in form", `location.pathname === "/fleet/login" && !!document.querySelector("form#login")`)
			if tc.lang != "en" {
				b.clickAndWait(`a[data-lang="` + tc.lang + `"]`)
			}
			if got := eval[string](b, "lang", `document.documentElement.lang`); got != tc.lang {
				b.fail("the page speaks %q, want %q", got, tc.lang)
			}
			b.noHorizontalScroll("the sign-in page")
			b.do("fill in the form",
				chromedp.SetValue(chromedp.CSS(`form#login input[name=tenant]`), "acme"),
				chromedp.SetValue(chromedp.CSS(`form#login input[name=name]`), "ana"),
				chromedp.SetValue(chromedp.CSS(`form#login input[name=password]`), anaPW))
			b.clickAndWait(`form#login button[type=submit]`)
			if p := eval[string](b, "path", `location.pathname`); p != "/fleet/" {
				b.fail("after signing in the page is %s, want /fleet/", p)
			}
			b.waitJS("s1 online", `!!document.querySelector('[data-store="s1"][data-online="true"]')`)
			if got := eval[string](b, "s1's badge", `document.querySelector('[data-store="s1"] .badge').textContent`); got != tc.on {
				b.fail("s1's badge says %q, want %q", got, tc.on)
			}
			type job struct {
				Text, Color string
			}
			j := eval[job](b, "T-1", `(() => { const li = document.querySelector('li.red[data-task="T-1"]');
				return li ? {Text: li.textContent, Color: getComputedStyle(li).color} : {Text: "", Color: ""}; })()`)
			if !strings.Contains(j.Text, tc.timedOut) || j.Color != "rgb(180, 35, 24)" {
				b.fail("T-1 shows %q in %s; want %q in red rgb(180, 35, 24)", j.Text, j.Color, tc.timedOut)
			}
			b.noHorizontalScroll("the fleet page")
			b.screenshot("fleet")

			// A job the agent reports now appears without a reload.
			later := "T-" + tc.lang
			eval[chromedp.Void](b, "mark the page", `window.__pgOld = true`)
			a.timedOut(t, later)
			b.waitJS(later+" appears by itself", `window.__pgOld === true && !!document.querySelector('li.red[data-task="`+later+`"]')`)

			// The store's log, from its card: a line the agent writes shows.
			b.clickAndWait(`[data-store="s1"] a.logs`)
			lt := a.next(t, func(m wire.Message) bool { _, ok := m.(*wire.LogsTail); return ok }).(*wire.LogsTail)
			line := "level=WARN msg=\"paper low\" printer=kitchen lang=" + tc.lang + " id=" + strings.Repeat("x", 120)
			a.send(t, &wire.LogLines{ID: lt.ID, Lines: []string{line}})
			b.waitJS("the agent's line on the log page", `[...document.querySelectorAll("#loglines li.lvl-warn")].some(li => li.textContent.includes("lang=`+tc.lang+`"))`)
			if got := eval[string](b, "the log's state", `document.querySelector("#logstate").textContent`); got != tc.live {
				b.fail("the log page says %q, want %q", got, tc.live)
			}
			b.noHorizontalScroll("the log page")
			b.screenshot("logs")
			// The agent refusing the tail ends it: the page says so with
			// the agent's code and offers to open it again.
			a.send(t, &wire.CommandResult{ID: lt.ID, Error: &wire.Problem{Code: "not_supported", Message: "this agent does not stream its logs"}})
			b.waitJS("the refusal on the log page", `document.querySelector("#logstate").dataset.state === "agent_refused" && !document.querySelector("#reopen").hidden`)
			if got := eval[string](b, "the refusal", `document.querySelector("#logstate").textContent`); !strings.Contains(got, tc.refused) || !strings.Contains(got, "not_supported: this agent does not stream its logs") {
				b.fail("after the agent's refusal the log page says %q, want %q with the agent's code and words", got, tc.refused)
			}

			dc := startPairing(t, r)
			b.open(strings.TrimPrefix(dc.URL(), r.base))
			if got := eval[string](b, "the code", `document.querySelector("#code").value`); got != dc.UserCode {
				b.fail("the approval page shows code %q, want %q", got, dc.UserCode)
			}
			b.do("choose s2", chromedp.SetValue(chromedp.CSS(`select#store`), "s2"))
			b.noHorizontalScroll("the approval page")
			b.screenshot("pair")
			b.clickAndWait(`#approve`)
			if got := eval[string](b, "flash", `(document.querySelector("#flash") || {}).textContent || ""`); !strings.Contains(got, dc.UserCode) || !strings.Contains(got, tc.approved) {
				b.fail("after approving the page says %q", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := dc.Wait(ctx); err != nil {
				t.Fatalf("the agent's pairing after the approval: %v", err)
			}
		})
	}
}
