package lanescan

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"printgate/drivers"
	"printgate/drivers/printertest"
)

// TestScanFindsEmulator scans the emulator's own loopback address and
// nothing else, and finds it answering as an ESC/POS printer.
func TestScanFindsEmulator(t *testing.T) {
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ap := netip.MustParseAddrPort(p.Addr())
	port := int(ap.Port())
	var calls [][2]int
	found, err := Scan(context.Background(), ap.Addr().String()+"/32", port, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Name != ap.String() || !found[0].Answers {
		t.Errorf("found %+v, want the emulator at %s answering", found, ap)
	}
	if fmt.Sprint(calls) != "[[1 1]]" {
		t.Errorf("progress %v, want [[1 1]]", calls)
	}
	if _, err := Scan(context.Background(), "10.0.0.0/8", port, nil); err == nil {
		t.Error("a /8 was accepted; it must be refused before any connect")
	}
}

// TestScanOnlyPrivate ensures the page's scan covers what install's does
// and nothing that is not private: the /24 around each private IPv4
// address of the PC, never a public one (the page once scanned the /24 of
// any address, so a PC with a public one would have probed 254 strangers),
// loopback, link-local or IPv6; and a network or an address named for a
// scan or a test outside the private ranges and loopback is refused before
// any connection. Addresses only: nothing here connects.
func TestScanOnlyPrivate(t *testing.T) {
	for in, want := range map[string]string{
		"192.168.1.23/24": "192.168.1.0/24",
		"10.1.2.3/8":      "10.1.2.0/24",
		"172.16.5.4/30":   "172.16.5.4/30",
		"127.0.0.1/8":     "",
		"169.254.3.4/16":  "",
		"fd00::5/64":      "",
		"203.0.113.5/24":  "",
		"8.8.8.8/16":      "",
		"100.64.1.2/10":   "",
		"172.32.0.9/24":   "",
	} {
		got := strings.Join(drivers.LocalScanNetworks([]netip.Prefix{netip.MustParsePrefix(in)}), " ")
		if got != want {
			t.Errorf("the PC at %s scans %q, want %q", in, got, want)
		}
	}
	for _, cidr := range []string{"203.0.113.0/24", "8.8.8.8", "100.64.0.0/24", "0.0.0.0/24", "10.0.0.0/7", "::1", "fd00::/120"} {
		if err := allowed(cidr); err == nil || !strings.Contains(err.Error(), "not a private network") && !strings.Contains(err.Error(), "bad network") {
			t.Errorf("a scan of %s is allowed (%v), want it refused", cidr, err)
		}
	}
	for _, cidr := range []string{"192.168.1.0/24", "10.9.8.0/24", "172.20.1.7", "127.0.0.1/32"} {
		if err := allowed(cidr); err != nil {
			t.Errorf("a scan of %s is refused: %v", cidr, err)
		}
	}
}

// TestProbeOneAddress ensures the page's test of a printer typed by its
// address finds the emulator on loopback answering, says when nothing
// answers, and refuses a public address before any connection.
func TestProbeOneAddress(t *testing.T) {
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	f, err := Probe(context.Background(), p.Addr())
	if err != nil || !f.Answers || f.URL != "tcp://"+p.Addr() {
		t.Errorf("probe of the emulator at %s: %+v, %v; want it answering", p.Addr(), f, err)
	}
	p.Close()
	if _, err := Probe(context.Background(), p.Addr()); err == nil || !strings.Contains(err.Error(), "nothing answers at "+p.Addr()) {
		t.Errorf("probe of a closed port: %v, want \"nothing answers\"", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were the check missing, a cancelled dial sends nothing
	if _, err := Probe(ctx, "203.0.113.5:9100"); err == nil || !strings.Contains(err.Error(), "not on a private network") {
		t.Errorf("probe of a public address: %v, want it refused", err)
	}
}
