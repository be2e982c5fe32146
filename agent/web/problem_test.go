package web

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestLoginPINUnreadable ensures a PIN file the agent cannot read (here a
// directory where the file should be) gives the error page in the page's
// own layout, in the browser's language, saying what is wrong and what
// to do, with the file named; not a bare "internal error".
func TestLoginPINUnreadable(t *testing.T) {
	h := newHarness(t)
	if err := os.Mkdir(PINPath(h.dir), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ lang, what, fix string }{
		{"en", "cannot read the manager PIN file", "printgate pin set"},
		{"zh-CN", "无法读取管理员 PIN 文件", "printgate pin set"},
	} {
		c := &client{lang: tc.lang}
		res := h.login(c, testPIN)
		if res.StatusCode != http.StatusInternalServerError {
			t.Fatalf("%s: login with an unreadable PIN file: %d, want 500", tc.lang, res.StatusCode)
		}
		body := readBody(t, res)
		for _, want := range []string{`id="problem"`, `href="/static/app.css"`, `lang="` + tc.lang + `"`, tc.what, tc.fix, PINPath(h.dir)} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the error page lacks %q:\n%s", tc.lang, want, body)
			}
		}
		if strings.Contains(body, "internal error") || strings.Contains(body, "is a directory") {
			t.Errorf("%s: the error page shows the raw error:\n%s", tc.lang, body)
		}
	}
	if !strings.Contains(h.log.String(), "is a directory") {
		t.Errorf("the cause is not in the log:\n%s", h.log.String())
	}
}

// TestProblemWords ensures the page words an error by what it knows: a
// *Problem's sentences, a fixer's own text and fix, and for anything else
// only what the page was doing, never the raw error.
func TestProblemWords(t *testing.T) {
	denied := pinReadProblem("/var/lib/printgate", &fs.PathError{Op: "open", Path: "/var/lib/printgate/manager-pin", Err: fs.ErrPermission})
	got := words(langEN, "", fmt.Errorf("login: %w", denied))
	if !strings.Contains(got.What, "not allowed to read the manager PIN file /var/lib/printgate/manager-pin") || !strings.Contains(got.Fix, "account the agent runs as") {
		t.Errorf("permission denied worded %+v", got)
	}
	for _, pr := range []*Problem{denied, pinReadProblem("/d", errors.New("is a directory")), {What: "problem.setupcode.read", Fix: "problem.setupcode.read.fix", Args: []any{"/d/setup-code"}}} {
		for _, l := range []lang{langEN, langZH} {
			if got := words(l, "", pr); strings.Contains(got.Fix+got.What, "%!") {
				t.Errorf("a format verb is left: %+v", got)
			}
		}
	}
	if got.Command == "" && os.PathSeparator == '/' {
		t.Errorf("no chown command offered: %+v", got)
	}
	got = words(langZH, "", denied)
	if !strings.Contains(got.What, "无权读取") {
		t.Errorf("zh: %+v", got)
	}
	got = words(langEN, "", testFixer{})
	if got.What != "the spool is locked" || got.Fix != "stop the other printgate" {
		t.Errorf("a fixer worded %+v", got)
	}
	got = words(langEN, "problem.tasks", errors.New("bbolt: secret internals"))
	if strings.Contains(got.What+got.Fix, "bbolt") || !strings.Contains(got.What, "task list") {
		t.Errorf("a plain error worded %+v", got)
	}
}

type testFixer struct{}

func (testFixer) Error() string { return "the spool is locked" }
func (testFixer) Fix() string   { return "stop the other printgate" }

func readBody(t *testing.T, res *http.Response) string {
	t.Helper()
	var b strings.Builder
	if _, err := io.Copy(&b, res.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
