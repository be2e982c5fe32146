package web

import (
	"html"
	"strings"
	"testing"
	"time"

	"printgate/drivers"
)

// netsFake is the fake backend that says which networks its scan covers.
type netsFake struct {
	*fakeBackend
	nets []string
}

func (f *netsFake) ScanNetworks() ([]string, error) { return f.nets, nil }

// waitScanned waits for the page's scan to finish.
func waitScanned(t *testing.T, h *harness) scanState {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		st, ch := h.p.scan.watch()
		if st.Finished {
			return st
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("the scan never finished")
		}
	}
}

// TestScanNamesItsNetworks ensures the scan box names the networks it
// scanned and the private ranges it keeps to, that no "Scan started." stays
// on the page once the scan is done (a flash said it after the end), and
// that a PC with no private network scans nothing and says where to add a
// printer instead.
func TestScanNamesItsNetworks(t *testing.T) {
	var fake *netsFake
	h := newHarnessOver(t, func(f *fakeBackend) Backend {
		fake = &netsFake{fakeBackend: f, nets: []string{"192.168.7.0/24"}}
		return fake
	})
	h.setPIN()
	c := h.session()
	w := h.post(c, "/printers/scan", nil)
	wantRedirect(t, w, "/printers")
	waitScanned(t, h)
	page := h.get(c, "/printers").Body.String()
	for _, want := range []string{
		html.EscapeString(catalog["printers.scan.intro"].en[:strings.Index(catalog["printers.scan.intro"].en, "%s")]) + drivers.ScanRanges,
		"Scanned 192.168.7.0/24: 1 found.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page after the scan lacks %q", want)
		}
	}
	if strings.Contains(page, "Scan started.") {
		t.Error("the page still says \"Scan started.\" after the scan finished")
	}
	if body := h.get(c, "/printers/scan").Body.String(); !strings.Contains(body, "Scanned 192.168.7.0/24: 1 found.") {
		t.Errorf("the scan stream's result does not name the network:\n%s", body)
	}

	fake.nets = nil
	calls := len(h.f.Calls())
	wantRedirect(t, h.post(c, "/printers/scan", nil), "/printers")
	waitScanned(t, h)
	page = h.get(c, "/printers").Body.String()
	if !strings.Contains(page, html.EscapeString("Nothing scanned: this PC has no address on a private network ("+drivers.ScanRanges+")")) {
		t.Errorf("a PC with no private network: the page does not say nothing was scanned and why")
	}
	for _, call := range h.f.Calls()[calls:] {
		if call == "scan" {
			t.Error("the page scanned although the PC has no private network")
		}
	}
}

// TestWhenKeepsDateAndTimeTogether ensures the page's times cannot wrap
// between the date and the time (they wrapped in the dashboard's and the
// printers' narrow columns at 1280 px): a no-break space joins them.
func TestWhenKeepsDateAndTimeTogether(t *testing.T) {
	got := templateFuncs["when"].(func(time.Time) string)(time.Date(2026, 12, 3, 14, 30, 5, 0, time.Local))
	if got != "2026-12-03\u00a014:30:05" {
		t.Errorf("when = %q, want the date and time joined by a no-break space", got)
	}
}
