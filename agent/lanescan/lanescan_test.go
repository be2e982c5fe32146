package lanescan

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"

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

// TestScanPrefix ensures the PC's own networks are scanned around its
// address, never wider than ScanTCP allows, and loopback, link-local and
// IPv6 are left out.
func TestScanPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"192.168.1.23/24": "192.168.1.0/24",
		"10.1.2.3/8":      "10.1.0.0/22",
		"172.16.5.4/30":   "172.16.5.4/30",
		"127.0.0.1/8":     "",
		"169.254.3.4/16":  "",
		"fd00::5/64":      "",
	} {
		ip, ipn, err := net.ParseCIDR(in)
		if err != nil {
			t.Fatal(err)
		}
		ipn.IP = ip
		p, ok := scanPrefix(ipn)
		got := ""
		if ok {
			got = p.String()
		}
		if got != want {
			t.Errorf("scanPrefix(%s) = %q, want %q", in, got, want)
		}
	}
}
