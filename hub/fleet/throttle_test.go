package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestThrottleWindow ensures a key is held for a minute after the tenth
// failure within a minute, free again after it, that failures spread
// wider than the window never hold it, and that the memory is bounded:
// the key whose last failure is oldest is forgotten first.
func TestThrottleWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	th := newThrottle(func() time.Time { return now }, 10, time.Minute, 3)
	for i := 1; i <= 9; i++ {
		if th.fail("a") {
			t.Fatalf("held after %d failures", i)
		}
	}
	if !th.fail("a") || th.lockedFor("a") != time.Minute {
		t.Fatalf("the tenth failure: held for %v, want a minute", th.lockedFor("a"))
	}
	now = now.Add(59 * time.Second)
	if th.lockedFor("a") != time.Second {
		t.Fatalf("59 s later: %v left", th.lockedFor("a"))
	}
	now = now.Add(time.Second)
	if th.lockedFor("a") != 0 {
		t.Fatalf("a minute later still held for %v", th.lockedFor("a"))
	}
	for i := range 30 {
		now = now.Add(7 * time.Second)
		if th.fail("b") {
			t.Fatalf("failures 7 s apart held the key at the %dth", i+1)
		}
	}
	for i := range 5 {
		th.fail(fmt.Sprint("k", i))
	}
	if len(th.keys) != 3 || th.order.Len() != 3 {
		t.Fatalf("%d keys remembered, want the bound 3", len(th.keys))
	}
	if _, ok := th.keys["k4"]; !ok {
		t.Fatal("the latest key was forgotten")
	}
}

// TestLocalPath ensures the page sends a browser after sign-in only to
// its own paths, never to another site.
func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/fleet/pair?user_code=BCDF-GHJK": "/fleet/pair?user_code=BCDF-GHJK",
		"/fleet":                          "/fleet",
		"":                                "/fleet/",
		"https://evil.example/fleet/":     "/fleet/",
		"//evil.example/fleet/":           "/fleet/",
		"/v1/stores":                      "/fleet/",
		"/fleetx":                         "/fleet/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCatalogComplete ensures every message has both languages and every
// id the templates and the code ask for is in the catalog.
func TestCatalogComplete(t *testing.T) {
	ids := regexp.MustCompile(`\.T "([a-z.]+)"|l\.T\("([a-z.]+)"`)
	files, _ := filepath.Glob("templates/*.html")
	gos, _ := filepath.Glob("*.go")
	for _, f := range append(files, gos...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ids.FindAllStringSubmatch(string(b), -1) {
			if id := m[1] + m[2]; !strings.HasSuffix(id, ".") && catalog[id].en == "" {
				t.Errorf("%s asks for %q, which the catalog lacks", f, id)
			}
		}
	}
	for id, m := range catalog {
		if m.en == "" || m.zh == "" {
			t.Errorf("%s lacks a language: %+v", id, m)
		}
	}
}
