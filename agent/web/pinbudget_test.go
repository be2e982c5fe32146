package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPINBudget ensures wrong PINs spread over many addresses, each below
// its own lockout, spend the shared budget: the PINBudgetFailures-th one
// and every PIN check after it, from any address and with the right PIN
// too, get 429 with Retry-After until the pause ends; the trip is logged
// once at WARN and raises one alert in both languages; the next trip
// pauses twice as long.
func TestPINBudget(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	manager := h.session()
	addr := func(i int) *client { return &client{remote: fmt.Sprintf("192.0.2.%d:4000", i)} }

	for i := 1; i <= PINBudgetFailures; i++ {
		h.clock.Advance(time.Second)
		res := h.login(addr(1+i%10), "111111") // 10 addresses, 2 each
		want := http.StatusUnauthorized
		if i == PINBudgetFailures {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Fatalf("wrong PIN %d: %d, want %d", i, res.StatusCode, want)
		}
	}
	fresh := addr(200)
	res := h.login(fresh, testPIN)
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the right PIN from a fresh address during the pause: %d, want 429", res.StatusCode)
	}
	if got := res.Header.Get("Retry-After"); got != "60" {
		t.Fatalf("Retry-After %q, want 60", got)
	}
	w := h.get(addr(201), "/login")
	wantStatus(t, w, http.StatusTooManyRequests)
	wantBody(t, w, "PIN sign-in is paused for everyone", "Try again in 1 minute")
	if w.Header().Get("Retry-After") != "60" {
		t.Fatalf("GET /login during the pause: Retry-After %q", w.Header().Get("Retry-After"))
	}

	// A manager already signed in sees the alert, in both languages.
	w = h.get(manager, "/")
	wantStatus(t, w, http.StatusOK)
	wantBody(t, w, "Someone tried many wrong PINs from 10 addresses; PIN sign-in is paused for 1 minute.",
		"check who is on the store&#39;s network")
	manager.lang = "zh-CN"
	wantBody(t, h.get(manager, "/"), "有人从 10 个地址多次输错 PIN；PIN 登录已暂停 1 分钟。")
	if n := strings.Count(h.log.String(), "PIN sign-in is paused for everyone"); n != 1 {
		t.Fatalf("%d WARN lines for one trip, want 1:\n%s", n, h.log.String())
	}
	if !strings.Contains(h.log.String(), "level=WARN msg=\"manager page: many wrong PINs from 10 addresses; PIN sign-in is paused for everyone for 1 minute.") {
		t.Fatalf("trip not logged at WARN:\n%s", h.log.String())
	}

	// When the pause ends the right PIN signs in again, from anywhere.
	h.clock.Advance(PINFirstPause)
	if res := h.login(fresh, testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right PIN after the pause: %d, want 303", res.StatusCode)
	}

	// A second trip pauses for two minutes and updates the one alert.
	for i := 1; i <= PINBudgetFailures; i++ {
		h.login(addr(50+i), "111111")
	}
	res = h.login(addr(250), testPIN)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "120" {
		t.Fatalf("after a second trip: %d, Retry-After %q; want 429, 120", res.StatusCode, res.Header.Get("Retry-After"))
	}
	manager.lang = ""
	w = h.get(manager, "/")
	wantBody(t, w, "from 20 addresses; PIN sign-in is paused for 2 minutes.")
	if n := strings.Count(w.Body.String(), "Someone tried many wrong PINs"); n != 1 {
		t.Fatalf("%d PIN alerts after two trips, want 1", n)
	}
}

// TestPINBudgetSparesAManager ensures a manager who mistypes a few times,
// now and then, is never paused: four wrong PINs a few times an hour stay
// under both budgets.
func TestPINBudgetSparesAManager(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	for round := range 4 {
		c := &client{remote: fmt.Sprintf("192.0.2.%d:1", 10+round)}
		for range PINFailureLimit - 1 {
			if res := h.login(c, "111111"); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("round %d: wrong PIN answered %d", round, res.StatusCode)
			}
		}
		if res := h.login(c, testPIN); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("round %d: the right PIN answered %d", round, res.StatusCode)
		}
		h.clock.Advance(15 * time.Minute)
	}
}

// TestPINLockoutPerSubnet ensures wrong PINs from one IPv6 /64 count as one
// client, whatever address of it each comes from: the fifth locks a sixth
// address of the /64 out (429 with Retry-After), not another /64.
func TestPINLockoutPerSubnet(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	for i := 1; i <= PINFailureLimit; i++ {
		h.login(&client{remote: fmt.Sprintf("[2001:db8:0:1::%x]:1", i)}, "111111")
	}
	res := h.login(&client{remote: "[2001:db8:0:1:aaaa::1]:1"}, testPIN)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "60" {
		t.Fatalf("another address of the locked /64: %d, Retry-After %q; want 429, 60", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := h.login(&client{remote: "[2001:db8:0:2::1]:1"}, testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("another /64: %d, want 303", res.StatusCode)
	}
}
