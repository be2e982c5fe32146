package web

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/agent/localapi"
)

// testConfig is a config file as a person keeps it: comments, odd
// spacing, no final newline. It lists the fake's two printers.
const testConfig = `# store config — keep this comment
api_token = "addprinter-test-token-0123456789"

# the kitchen printer
[[printers]]
name = "kitchen"   # by the grill
url = "tcp://192.0.2.10"

[[printers]]
name = "bar"
url = "tcp://192.0.2.11"`

// reloadingFake is the fake backend that can also reload its config, like
// the agent: it reads the file, refuses one with errors, and otherwise
// makes the file's printers its own, saying which came and went.
type reloadingFake struct {
	*fakeBackend
	path string
}

var _ localapi.Reloader = (*reloadingFake)(nil)

func (r *reloadingFake) Reload(ctx context.Context) (api.ReloadResult, error) {
	r.call("reload")
	res := api.ReloadResult{Config: r.path}
	cfg, err := config.Load(r.path)
	if err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				res.Errors = append(res.Errors, e.Error())
			}
		}
		return res, fmt.Errorf("%w: %w", api.ErrConfigRefused, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var old, now []string
	for _, p := range r.printers {
		old = append(old, p.Name)
	}
	var ps []api.PrinterDetail
	for _, p := range cfg.Printers {
		now = append(now, p.Name)
		ps = append(ps, api.PrinterDetail{PrinterInfo: api.PrinterInfo{Name: p.Name, URL: p.URL, State: "READY"}})
		if !slices.Contains(old, p.Name) {
			res.Added = append(res.Added, p.Name)
		}
	}
	for _, n := range old {
		if !slices.Contains(now, n) {
			res.Removed = append(res.Removed, n)
		}
	}
	r.printers = ps
	res.Applied = true
	return res, nil
}

// configHarness is a page over a reloading backend whose config file
// holds text.
func configHarness(t *testing.T, text string) (*harness, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "printgate.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarnessOver(t, func(f *fakeBackend) Backend { return &reloadingFake{fakeBackend: f, path: path} },
		func(o *Options, _ *fakeBackend) { o.ConfigPath = path })
	h.setPIN()
	return h, path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flashOf follows a 303 and returns the page it leads to.
func (h *harness) follow303(c *client, w interface{ Header() http.Header }) string {
	h.t.Helper()
	loc := w.Header().Get("Location")
	return h.get(c, loc).Body.String()
}

var (
	addHref  = regexp.MustCompile(`<a class="add-printer[^"]*" href="([^"]+)"`)
	sumField = regexp.MustCompile(`name="sum" value="([0-9a-f]{64})"`)
	nameIn   = regexp.MustCompile(`<input name="name" value="([^"]*)"`)
	blockPre = regexp.MustCompile(`(?s)<pre id="add-block">(.*?)</pre>`)
)

// addForm opens the add page behind the link for url on the printers
// page and returns the form's fields.
func addForm(t *testing.T, h *harness, c *client, printerURL string) (name, sum, block string) {
	t.Helper()
	page := h.get(c, "/printers").Body.String()
	var link string
	for _, m := range addHref.FindAllStringSubmatch(page, -1) {
		u, err := url.Parse(html.UnescapeString(m[1]))
		if err == nil && u.Path == "/printers/add" && u.Query().Get("url") == printerURL {
			link = u.String()
		}
	}
	if link == "" {
		t.Fatalf("no add link for %s on the printers page:\n%s", printerURL, page)
	}
	w := h.get(c, link)
	wantStatus(t, w, http.StatusOK)
	body := w.Body.String()
	wantBody(t, w, `<form id="confirm"`, `name="url" value="`+html.EscapeString(printerURL)+`"`)
	n, s, b := nameIn.FindStringSubmatch(body), sumField.FindStringSubmatch(body), blockPre.FindStringSubmatch(body)
	if n == nil || s == nil || b == nil {
		t.Fatalf("add form lacks name, sum or block:\n%s", body)
	}
	return html.UnescapeString(n[1]), s[1], html.UnescapeString(b[1])
}

// TestConfigActionsGuarded ensures anonymous visitors are sent to log in
// and a POST without the CSRF token is refused, doing nothing.
func TestConfigActionsGuarded(t *testing.T) {
	h, path := configHarness(t, testConfig)
	h.f.found = append(h.f.found, foundSerial())
	for _, p := range []string{"/printers/reload", "/printers/add?url=serial%3A%2F%2FCOM3&name=x"} {
		wantRedirect(t, h.get(anon(), p), "/login")
	}
	_, sum, _ := addForm(t, h, h.session(), "serial://COM3?baud=19200")
	add := url.Values{"name": {"counter"}, "url": {"serial://COM3?baud=19200"}, "sum": {sum}}
	for _, p := range []string{"/printers/reload", "/printers/add"} {
		wantRedirect(t, h.post(anon(), p, url.Values{"name": add["name"], "url": add["url"], "sum": add["sum"]}), "/login")
		c := h.session()
		c.csrf = ""
		wantStatus(t, h.post(c, p, url.Values{"name": add["name"], "url": add["url"], "sum": add["sum"]}), http.StatusForbidden)
	}
	if got := readFile(t, path); got != testConfig {
		t.Fatalf("the config was written without a session or token:\n%s", got)
	}
	if calls := h.f.Calls(); slices.Contains(calls, "reload") {
		t.Fatalf("reloaded without a session or token: %v", calls)
	}
}

// TestReloadFlashesChanges ensures the reload button leads to a
// confirmation, and the reload's added and removed printers are flashed.
func TestReloadFlashesChanges(t *testing.T) {
	h, path := configHarness(t, testConfig)
	c := h.session()
	wantBody(t, h.get(c, "/printers"), `<form id="reload" method="get" action="/printers/reload"`)
	wantBody(t, h.get(c, "/printers/reload"), `<form id="confirm" method="post" action="/printers/reload"`, html.EscapeString(path))
	// Someone adds a printer and drops bar by hand.
	edited := strings.Replace(testConfig, "name = \"bar\"\nurl = \"tcp://192.0.2.11\"", "name = \"pass\"\nurl = \"tcp://192.0.2.12\"", 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	w := h.post(c, "/printers/reload", nil)
	wantRedirect(t, w, "/printers")
	page := h.follow303(c, w)
	for _, s := range []string{`id="flash"`, "Config reloaded.", "Added: pass", "Removed: bar", `data-printer="pass"`} {
		if !strings.Contains(page, s) {
			t.Fatalf("printers page after the reload lacks %q:\n%s", s, page)
		}
	}
	if calls := h.f.Calls(); !slices.Contains(calls, "reload") {
		t.Fatalf("no reload: %v", calls)
	}
}

// TestReloadRefusedFlashesErrors ensures a config with errors is flashed
// line by line, with word that the running config is kept.
func TestReloadRefusedFlashesErrors(t *testing.T) {
	h, path := configHarness(t, testConfig)
	bad := testConfig + "\n\n[[printers]]\nname = \"kitchen\"\nurl = \"tcp://192.0.2.13\"\nbakup = \"bar\"\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, lerr := config.Load(path)
	var es config.Errors
	if !errors.As(lerr, &es) || len(es) < 2 {
		t.Fatalf("the bad config should have two problems or more: %v", lerr)
	}
	c := h.session()
	w := h.post(c, "/printers/reload", nil)
	wantRedirect(t, w, "/printers")
	page := h.follow303(c, w)
	if !strings.Contains(page, "flash-error") || !strings.Contains(page, "the running config is kept") {
		t.Fatalf("no refusal flashed:\n%s", page)
	}
	for _, e := range es {
		if !strings.Contains(page, "<li class=\"break\">"+html.EscapeString(e.Error())+"</li>") {
			t.Fatalf("error %q not flashed as its own line:\n%s", e.Error(), page)
		}
	}
	if strings.Contains(page, `data-printer="pass"`) || !strings.Contains(page, `data-printer="bar"`) {
		t.Fatal("the refused config changed the printers")
	}
}

// TestReloadUnsupported ensures a backend without Reload says so.
func TestReloadUnsupported(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := h.session()
	w := h.post(c, "/printers/reload", nil)
	wantRedirect(t, w, "/printers")
	if page := h.follow303(c, w); !strings.Contains(page, catalog["flash.reload.unsupported"].en) {
		t.Fatalf("no word that the agent cannot reload:\n%s", page)
	}
}

// TestAddPrinterAppends ensures a discovered printer's add link leads to a
// form showing the lines to append, and submitting it appends exactly
// them after the untouched file, reloads, and flashes the new printer.
func TestAddPrinterAppends(t *testing.T) {
	h, path := configHarness(t, testConfig)
	h.f.found = append(h.f.found, foundSerial())
	c := h.session()
	name, sum, block := addForm(t, h, c, "serial://COM3?baud=19200")
	if name != "printer-1" {
		t.Fatalf("suggested name %q, want printer-1", name)
	}
	wantBlock := "# added from the manager page\n[[printers]]\nname = \"printer-1\"\nurl = \"serial://COM3?baud=19200\"\n"
	if block != wantBlock {
		t.Fatalf("shown block:\n%s\nwant:\n%s", block, wantBlock)
	}
	w := h.post(c, "/printers/add", url.Values{"name": {"counter"}, "url": {"serial://COM3?baud=19200"}, "sum": {sum}})
	wantRedirect(t, w, "/printers")
	want := testConfig + "\n" + strings.Replace(wantBlock, "printer-1", "counter", 1)
	want = strings.Replace(want, "# added", "\n# added", 1)
	if got := readFile(t, path); got != want {
		t.Fatalf("config after the add:\n%s\nwant:\n%s", got, want)
	}
	if calls := h.f.Calls(); !slices.Contains(calls, "reload") {
		t.Fatalf("the add did not reload: %v", calls)
	}
	page := h.follow303(c, w)
	for _, s := range []string{"Printer counter was added to the config and is printing.", "Added: counter", `data-printer="counter"`} {
		if !strings.Contains(page, s) {
			t.Fatalf("printers page after the add lacks %q:\n%s", s, page)
		}
	}
}

// TestAddPrinterFileChanged ensures a config edited between the form and
// the submit is not written: the other writer's text stays.
func TestAddPrinterFileChanged(t *testing.T) {
	h, path := configHarness(t, testConfig)
	h.f.found = append(h.f.found, foundSerial())
	c := h.session()
	_, sum, _ := addForm(t, h, c, "serial://COM3?baud=19200")
	other := testConfig + "\n# edited by hand meanwhile\n"
	if err := os.WriteFile(path, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	w := h.post(c, "/printers/add", url.Values{"name": {"counter"}, "url": {"serial://COM3?baud=19200"}, "sum": {sum}})
	wantRedirect(t, w, "/printers/add?")
	if got := readFile(t, path); got != other {
		t.Fatalf("the config changed meanwhile was overwritten:\n%s", got)
	}
	if slices.Contains(h.f.Calls(), "reload") {
		t.Fatal("reloaded after a refused add")
	}
	page := h.follow303(c, w)
	if !strings.Contains(page, catalog["flash.add.changed"].en) || !strings.Contains(page, `<form id="confirm"`) {
		t.Fatalf("no word that the file changed, or no form to look again:\n%s", page)
	}
	// The form shown again carries the new text's sum, so it now works.
	s := sumField.FindStringSubmatch(page)
	if s == nil || s[1] == sum || s[1] != fileSum([]byte(other)) {
		t.Fatalf("the form shown again has sum %v, want the edited file's", s)
	}
}

// TestAddPrinterTakenName ensures a name already in the config is refused
// with the config's own message, the file untouched.
func TestAddPrinterTakenName(t *testing.T) {
	h, path := configHarness(t, testConfig)
	h.f.found = append(h.f.found, foundSerial())
	c := h.session()
	_, sum, _ := addForm(t, h, c, "serial://COM3?baud=19200")
	// What the config package says of this name, from a copy.
	cp := filepath.Join(t.TempDir(), "printgate.toml")
	os.WriteFile(cp, []byte(testConfig), 0o600)
	_, cerr := config.AppendPrinter(cp, "kitchen", "serial://COM3?baud=19200", nil)
	var es config.Errors
	if !errors.As(cerr, &es) {
		t.Fatalf("the config package accepts a taken name: %v", cerr)
	}
	w := h.post(c, "/printers/add", url.Values{"name": {"kitchen"}, "url": {"serial://COM3?baud=19200"}, "sum": {sum}})
	wantRedirect(t, w, "/printers/add?")
	if got := readFile(t, path); got != testConfig {
		t.Fatalf("the config was written with a taken name:\n%s", got)
	}
	page := h.follow303(c, w)
	wantMsg := strings.Replace(es[0].Error(), cp, path, 1)
	if !strings.Contains(page, "Printer kitchen was not added:") || !strings.Contains(page, html.EscapeString(wantMsg)) {
		t.Fatalf("refusal lacks the config's message %q:\n%s", wantMsg, page)
	}
	// A bad name is refused before the file is read.
	w = h.post(c, "/printers/add", url.Values{"name": {"no spaces"}, "url": {"serial://COM3?baud=19200"}, "sum": {sum}})
	wantRedirect(t, w, "/printers/add?")
	if page := h.follow303(c, w); !strings.Contains(page, html.EscapeString(`Printer name "no spaces"`)) {
		t.Fatalf("bad name not refused:\n%s", page)
	}
	if got := readFile(t, path); got != testConfig || slices.Contains(h.f.Calls(), "reload") {
		t.Fatal("a refused add wrote or reloaded")
	}
}

// TestAddLinkForScanResults ensures LAN scan results, on the page and in
// the scan stream the script renders from, carry the add link's data.
func TestAddLinkForScanResults(t *testing.T) {
	h, _ := configHarness(t, testConfig)
	c := h.session()
	_, changed := h.p.scan.watch()
	wantRedirect(t, h.post(c, "/printers/scan", nil), "/printers")
	deadline := time.After(5 * time.Second)
	for {
		st, ch := h.p.scan.watch()
		if st.Finished {
			break
		}
		select {
		case <-changed:
		case <-ch:
		case <-deadline:
			t.Fatal("the scan never finished")
		}
		changed = ch
	}
	name, _, _ := addForm(t, h, c, "tcp://192.0.2.50:9100")
	if name != "printer-1" {
		t.Fatalf("suggested name %q", name)
	}
	w := h.get(c, "/printers/scan")
	wantBody(t, w, `"url":"tcp://192.0.2.50:9100"`, `"suggested":"printer-1"`)
	if !strings.Contains(h.get(c, "/static/app.js").Body.String(), "add.className = 'add-printer") {
		t.Fatal("the script does not draw add links for scan results")
	}
}

// TestAddUnavailableWithoutConfigPath ensures an agent that did not name
// its config file explains that adding is unavailable.
func TestAddUnavailableWithoutConfigPath(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := h.session()
	wantBody(t, h.get(c, "/printers/add?url=tcp%3A%2F%2F192.0.2.50"), html.EscapeString(catalog["add.unavailable"].en))
	w := h.post(c, "/printers/add", url.Values{"name": {"x"}, "url": {"tcp://192.0.2.50"}, "sum": {"0"}})
	wantRedirect(t, w, "/printers")
	if page := h.follow303(c, w); !strings.Contains(page, html.EscapeString(catalog["add.unavailable"].en)) {
		t.Fatalf("no word that adding is unavailable:\n%s", page)
	}
}
