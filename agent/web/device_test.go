package web

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// spendBudget trips the shared PIN budget from many addresses.
func (h *harness) spendBudget() {
	h.t.Helper()
	for i := 1; i <= PINBudgetFailures; i++ {
		h.login(&client{remote: fmt.Sprintf("192.0.2.%d:4000", 1+i%10)}, "111111")
	}
	if res := h.login(&client{remote: "192.0.2.200:4000"}, testPIN); res.StatusCode != http.StatusTooManyRequests {
		h.t.Fatalf("the budget is not spent: the right PIN from a fresh address is %d", res.StatusCode)
	}
}

// deviceOnly is c's cookies without its session: a browser that signed in
// before, whose session is over.
func deviceOnly(c *client) *client {
	out := &client{remote: c.remote}
	for _, ck := range c.cookies {
		if ck.Name != sessionCookie {
			out.cookies = append(out.cookies, ck)
		}
	}
	return out
}

// TestDeviceSignsInDuringPause ensures a browser that signed in with the
// right PIN gets a device cookie (HttpOnly, SameSite=Strict, remembered
// in the data dir, 0600) with which it signs in while the shared budget
// pauses everyone else, also after a restart of the page; the login form
// is not refused to it.
func TestDeviceSignsInDuringPause(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := &client{remote: "192.0.2.150:4000"}
	res := h.login(c, testPIN)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", res.StatusCode)
	}
	var dev *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == deviceCookie {
			dev = ck
		}
	}
	if dev == nil || !dev.HttpOnly || dev.SameSite != http.SameSiteStrictMode || dev.MaxAge <= 0 {
		t.Fatalf("device cookie %+v, want HttpOnly, SameSite=Strict, with a Max-Age", dev)
	}
	fi, err := os.Stat(filepath.Join(h.dir, DevicesFile))
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("devices file: %v %v, want one readable by its owner only", fi, err)
	}
	h.spendBudget()
	back := deviceOnly(c)
	wantStatus(t, h.get(back, "/login"), http.StatusOK)
	if res := h.login(back, testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right PIN from a browser that signed in before, during the pause: %d, want 303", res.StatusCode)
	}
	// A new page on the same data dir (a restart) remembers it.
	h2 := newHarness(t, func(o *Options, _ *fakeBackend) { o.DataDir = h.dir })
	h2.spendBudget()
	if res := h2.login(deviceOnly(c), testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after a restart, during a pause: %d, want 303", res.StatusCode)
	}
	forged := &client{remote: c.remote, cookies: []*http.Cookie{{Name: deviceCookie, Value: "forged"}}}
	if res := h2.login(forged, testPIN); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a forged device cookie during the pause: %d, want 429", res.StatusCode)
	}
}

// TestDeviceForgottenAfterWrongPINs ensures a device's own budget: its
// DeviceFailureLimit-th wrong PIN in a row forgets it, so a stolen cookie
// buys a handful of guesses, after which the pause holds it like anyone;
// a right PIN in between starts its count again.
func TestDeviceForgottenAfterWrongPINs(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := &client{remote: "192.0.2.150:4000"}
	if res := h.login(c, testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", res.StatusCode)
	}
	h.spendBudget()
	back := deviceOnly(c)
	for range DeviceFailureLimit - 1 {
		if res := h.login(back, "999999"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a wrong PIN from the device: %d, want 401", res.StatusCode)
		}
	}
	if res := h.login(back, testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right PIN after %d wrong ones: %d, want 303", DeviceFailureLimit-1, res.StatusCode)
	}
	back = deviceOnly(back)
	for range DeviceFailureLimit {
		h.clock.Advance(time.Second)
		h.login(back, "999999")
	}
	if res := h.login(back, testPIN); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the right PIN after %d wrong ones in a row, during the pause: %d, want 429 (the device is forgotten)", DeviceFailureLimit, res.StatusCode)
	}
}
