package web

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"printgate/agent/api"
	"printgate/spool"
)

var (
	templateKey = regexp.MustCompile(`\.T "([^"]+)"`)
	goKey       = regexp.MustCompile(`\.T\("([^"]+)"`)
)

// TestCatalogComplete ensures every message has both languages, every id
// the templates and the Go code use is in the catalog, and every state
// code the page shows has a label.
func TestCatalogComplete(t *testing.T) {
	for id, m := range catalog {
		if strings.TrimSpace(m.en) == "" || strings.TrimSpace(m.zh) == "" {
			t.Errorf("%s lacks a language: %+v", id, m)
		}
		if strings.Count(m.en, "%") != strings.Count(m.zh, "%") {
			t.Errorf("%s: the languages take different arguments: %q / %q", id, m.en, m.zh)
		}
	}
	used := map[string]string{}
	err := fs.WalkDir(templateFS, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(templateFS, path)
		for _, m := range templateKey.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = path
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	goFiles, _ := filepath.Glob("*.go")
	for _, f := range goFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goKey.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = f
		}
	}
	if len(used) < 100 {
		t.Fatalf("found only %d message ids in use; is the scan broken?", len(used))
	}
	for id, where := range used {
		if _, ok := catalog[id]; !ok {
			t.Errorf("%s uses %q, which is not in the catalog", where, id)
		}
	}
	codes := []string{"READY", "BUSY", "PAPER_OUT", "COVER_OPEN", "OFFLINE", "ERROR", "online", "offline", "unpaired", "disabled", "ok", "degraded", "failed"}
	for _, s := range spool.AllStates {
		codes = append(codes, string(s))
	}
	for _, c := range codes {
		if _, ok := catalog["state."+c]; !ok {
			t.Errorf("state %s has no label", c)
		}
	}
	for _, o := range []spool.Origin{spool.OriginCloud, spool.OriginLocal, spool.OriginManager} {
		if _, ok := catalog["origin."+string(o)]; !ok {
			t.Errorf("origin %s has no label", o)
		}
	}
	for _, c := range []spool.Confirmation{spool.ConfirmPrinted, spool.ConfirmConsumed, spool.ConfirmDelivered} {
		if _, ok := catalog["confirm."+string(c)]; !ok {
			t.Errorf("confirmation %s has no label", c)
		}
	}
}

// TestAcceptLanguage ensures the language follows the browser's
// preference when no choice was made.
func TestAcceptLanguage(t *testing.T) {
	for h, want := range map[string]lang{
		"":                            langEN,
		"zh-CN,zh;q=0.9":              langZH,
		"zh-TW":                       langZH,
		"ZH":                          langZH,
		"en-US,en;q=0.9,zh-CN;q=0.8":  langEN,
		"fr-FR,zh;q=0.5":              langZH,
		"de, en;q=0.3, zh-Hans;q=0.7": langZH,
		"zh;q=0, en;q=0.1":            langEN,
		"fr":                          langEN,
	} {
		if got := fromAcceptLanguage(h); got != want {
			t.Errorf("%q: %s, want %s", h, got, want)
		}
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// TestLanguageSwitch ensures pages come in Chinese for a Chinese browser
// or after the switch, and the switch only goes back to local paths.
func TestLanguageSwitch(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := h.session()
	c.lang = "zh-CN,zh;q=0.9"
	w := h.get(c, "/")
	wantBody(t, w, `<html lang="zh-CN">`, catalog["nav.printers"].zh, catalog["state.READY"].zh, `data-state="READY"`)
	w = h.get(anon(), "/login")
	wantBody(t, w, `<html lang="en">`, catalog["login.title"].en)
	if hasHan(strings.ReplaceAll(w.Body.String(), "中文", "")) {
		t.Fatal("English login page has Chinese text besides the switch")
	}
	// The switch sets a cookie that wins over Accept-Language.
	w = h.get(c, "/lang?to=en&back=/tasks?state=HELD")
	wantRedirect(t, w, "/tasks?state=HELD")
	var set *http.Cookie
	for _, ck := range w.Result().Cookies() {
		if ck.Name == langCookie {
			set = ck
		}
	}
	if set == nil || set.Value != "en" || !set.HttpOnly {
		t.Fatalf("language cookie %+v", set)
	}
	w = h.get(c, "/tasks")
	wantBody(t, w, `<html lang="en">`, catalog["tasks.title"].en)
	h.get(c, "/lang?to=zh-CN&back=/")
	c.lang = "en"
	wantBody(t, h.get(c, "/tasks"), `<html lang="zh-CN">`, catalog["tasks.anystate"].zh)

	for _, back := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", ""} {
		w := h.get(c, "/lang?to=en&back="+back)
		if loc := w.Header().Get("Location"); loc != "/" {
			t.Errorf("back=%q went to %q", back, loc)
		}
	}
	wantStatus(t, h.get(c, "/lang?to=fr"), http.StatusBadRequest)
	// The switch links are on every page.
	wantBody(t, h.get(c, "/logs"), `data-lang="en"`, `data-lang="zh-CN"`)
}

// TestSpoolStrainAlertSays ensures the page's spool alert says in the
// manager's language what strains the spool, from /healthz's fields: a
// spool refusing new tickets, or unable to record tickets' progress, is
// worded in English and Chinese, not only in the agent's English sentence.
func TestSpoolStrainAlertSays(t *testing.T) {
	for _, c := range []struct {
		h      api.Health
		en, zh string
	}{
		{api.Health{Status: "degraded", SpoolRefusing: true, Error: "e"}, "new tickets are refused", "新小票被拒收"},
		{api.Health{Status: "degraded", SpoolWriteFailing: true, SpoolRefusing: true, Error: "e"}, "cannot record the progress", "无法记录"},
		{api.Health{Status: "degraded", SpoolCompactError: "no room", Error: "the spool could not be compacted: no room"}, "could not be compacted", "无法压缩"},
		{api.Health{Status: "degraded", SpoolQuarantined: "x", SalvageError: "boom", Error: "e"}, "could not be recovered", "无法恢复"},
	} {
		f := newFake()
		f.health = c.h
		tr := newAlertTracker(f, time.Now, maxAlerts)
		tr.scanHealth()
		als := tr.list()
		if len(als) != 1 {
			t.Fatalf("%+v: %d alerts", c.h, len(als))
		}
		if en := als[0].Text(langEN); !strings.Contains(en, c.en) {
			t.Errorf("%+v: English alert %q, want %q", c.h, en, c.en)
		}
		if zh := als[0].Text(langZH); !strings.Contains(zh, c.zh) {
			t.Errorf("%+v: Chinese alert %q, want %q", c.h, zh, c.zh)
		}
	}
}
