package hostile

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBurntSetupCodeReplaced is the pen-test's §3: ten wrong setup codes
// from any program on the PC spent the first-run code, and no browser could
// set the PIN until printgate was restarted. A spent code is replaced at
// once: the agent's console and printgate status show the new one, which
// works, while the old one does not.
func TestBurntSetupCodeReplaced(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs every 127.0.0.0/8 address on lo (Linux)")
	}
	a := start(t, Setup{})
	old := a.setupCode(10 * time.Second)
	if old == "" {
		t.Fatalf("printgate run printed no first-run setup code:\n%s", a.Logs())
	}
	// Ten wrong codes, from three addresses so that none is locked out
	// (five a minute each): the spend limit is what they reach.
	for i := range 10 {
		st := setupFrom(t, a, 20+i%3, fmt.Sprintf("0000-%04d", i), rebindPIN)
		if st != http.StatusUnauthorized {
			t.Fatalf("wrong code %d: %d, want 401", i, st)
		}
	}
	st := a.status(t)
	m := setupCodeStatus.FindStringSubmatch(st)
	if m == nil || m[1] == old {
		t.Fatalf("after the code was spent, printgate status shows no new code (was %s):\n%s", old, st)
	}
	fresh := m[1]
	if !strings.Contains(a.Logs(), "first-run setup code: "+fresh) {
		t.Errorf("the agent's console does not show the new code %s:\n%s", fresh, a.Logs())
	}
	if st := setupFrom(t, a, 30, old, rebindPIN); st == http.StatusSeeOther || pinIsSet(t, a) {
		t.Fatalf("the spent code still set the PIN (%d)", st)
	}
	if st := setupFrom(t, a, 31, fresh, rebindPIN); st != http.StatusSeeOther || !pinIsSet(t, a) {
		t.Fatalf("setup with the new code %s: %d, want 303 and the PIN set", fresh, st)
	}
}

// setupCodeStatus is the setup code in printgate status's output.
var setupCodeStatus = regexp.MustCompile(`first-run setup code: (\d{4}-\d{4})`)

// setupFrom posts the setup form from 127.0.0.n, as a browser on the PC
// does, with code and pin, and returns the status.
func setupFrom(t *testing.T, a *Agent, n int, code, pin string) int {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	b := &browser{t: t, a: a, host: "127.0.0.1:" + a.port(t), client: &http.Client{
		Transport: tr, Jar: jar, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	_, page, _ := b.send("GET", "/setup", nil, nil)
	form := url.Values{"csrf": {csrfIn(page)}, "code": {code}, "pin": {pin}, "pin2": {pin}}
	st, _, _ := b.send("POST", "/setup", form, nil)
	return st
}
