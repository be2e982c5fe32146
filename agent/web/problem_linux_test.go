package web

import (
	"net/http"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestLoginPINNotOurs is the case where `sudo printgate pin set` left the
// PIN file root's, mode 0600, and the agent runs as another account. The
// login page says the agent may not read the file and how to give it
// back. Run as root, the test drops its effective uid to nobody around the
// login (and back): root reads any file.
func TestLoginPINNotOurs(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	if err := os.Chmod(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(PINPath(h.dir), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &client{}
	tok := formTokenIn(t, h.get(c, "/login").Body.String())
	if os.Geteuid() == 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := syscall.Seteuid(65534); err != nil {
			t.Skipf("cannot become nobody: %v", err)
		}
		defer func() {
			if err := syscall.Seteuid(0); err != nil {
				panic("cannot become root again: " + err.Error())
			}
		}()
	} else if err := os.Chmod(PINPath(h.dir), 0); err != nil {
		t.Fatal(err)
	}
	w := h.do(c, http.MethodPost, "/login", map[string][]string{"csrf": {tok}, "pin": {testPIN}})
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("login: %d, want 500:\n%s", w.Code, w.Body.String())
	}
	body := w.Body.String()
	for _, want := range []string{`id="problem"`, "not allowed to read the manager PIN file " + PINPath(h.dir), "account the agent runs as", "chown"} {
		if !strings.Contains(body, want) {
			t.Errorf("the login page lacks %q:\n%s", want, body)
		}
	}
}
