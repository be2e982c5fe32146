package drivers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
)

// loopbackPrinters listens on the same free port on each of the given
// 127.0.0.x hosts (all loopback on Linux) and makes sure the other hosts of
// 127.0.0.0/29 do not accept on it, so a scan of that /29 must find exactly
// these hosts. Each listener answers DLE EOT 1 with 0x16 when answer is set.
// Nothing here ever leaves the machine.
func loopbackPrinters(t *testing.T, hosts []string, answer bool) int {
	t.Helper()
	for try := 0; try < 20; try++ {
		first, err := net.Listen("tcp", hosts[0]+":0")
		if err != nil {
			t.Skipf("cannot listen on %s: %v", hosts[0], err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{first}
		ok := true
		for _, h := range hosts[1:] {
			ln, err := net.Listen("tcp", net.JoinHostPort(h, fmt.Sprint(port)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		if ok {
			for i := 1; i <= 6 && ok; i++ {
				h := fmt.Sprintf("127.0.0.%d", i)
				if contains(hosts, h) {
					continue
				}
				if c, err := net.Dial("tcp", net.JoinHostPort(h, fmt.Sprint(port))); err == nil {
					c.Close()
					ok = false
				}
			}
		}
		if !ok {
			for _, ln := range lns {
				ln.Close()
			}
			continue
		}
		for _, ln := range lns {
			t.Cleanup(func() { ln.Close() })
			go serveStatus(ln, answer)
		}
		return port
	}
	t.Fatal("no port free on all loopback hosts")
	return 0
}

func serveStatus(ln net.Listener, answer bool) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			b := make([]byte, 3)
			if n, _ := c.Read(b); answer && n == 3 && string(b) == "\x10\x04\x01" {
				c.Write([]byte{0x16})
			}
		}()
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestScanTCPFindsLoopbackListeners ensures a scan finds exactly the hosts
// accepting on the port, sorted, with URLs for the config, and reports
// progress for every host in order.
func TestScanTCPFindsLoopbackListeners(t *testing.T) {
	port := loopbackPrinters(t, []string{"127.0.0.5", "127.0.0.2"}, false)
	var mu sync.Mutex
	var progress []int
	total := 0
	found, err := ScanTCP(context.Background(), "127.0.0.0/29", port, ScanOptions{
		Concurrency: 3,
		Progress: func(done, n int) {
			mu.Lock()
			progress = append(progress, done)
			total = n
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.URL)
		if f.Kind != SchemeTCP || f.Answers {
			t.Errorf("found %+v", f)
		}
	}
	want := []string{fmt.Sprintf("tcp://127.0.0.2:%d", port), fmt.Sprintf("tcp://127.0.0.5:%d", port)}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("found %v, want %v", got, want)
	}
	if total != 6 || len(progress) != 6 {
		t.Fatalf("progress %v of %d, want 1..6 of 6", progress, total)
	}
	for i, d := range progress {
		if d != i+1 {
			t.Fatalf("progress %v not 1..6 in order", progress)
		}
	}
}

// TestScanTCPProbe ensures Probe marks hosts that answer DLE EOT 1 with a
// well-formed status byte.
func TestScanTCPProbe(t *testing.T) {
	port := loopbackPrinters(t, []string{"127.0.0.3"}, true)
	found, err := ScanTCP(context.Background(), "127.0.0.3", port, ScanOptions{Probe: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || !found[0].Answers || found[0].Status != 0x16 {
		t.Fatalf("found %+v", found)
	}
}

// TestScanTCPRefusesLargeNetworks ensures a scan never starts on more than
// a /22 and says why.
func TestScanTCPRefusesLargeNetworks(t *testing.T) {
	for _, cidr := range []string{"127.0.0.0/21", "127.0.0.0/8", "::1/64"} {
		_, err := ScanTCP(context.Background(), cidr, 9100, ScanOptions{})
		if err == nil || !strings.Contains(err.Error(), "scan at most a /") {
			t.Errorf("%s: %v", cidr, err)
		}
	}
	if _, err := ScanTCP(context.Background(), "127.0.0.0/33", 9100, ScanOptions{}); err == nil || !strings.Contains(err.Error(), "bad network") {
		t.Errorf("bad cidr: %v", err)
	}
	if _, err := ScanTCP(context.Background(), "127.0.0.1", 70000, ScanOptions{}); err == nil {
		t.Error("port 70000 accepted")
	}
}

// TestScanHosts ensures the host list skips IPv4 network and broadcast
// addresses and a /22 is still allowed.
func TestScanHosts(t *testing.T) {
	h, err := scanHosts("192.168.1.77/24")
	if err != nil || len(h) != 254 || h[0].String() != "192.168.1.1" || h[253].String() != "192.168.1.254" {
		t.Fatalf("/24: %d hosts, %v", len(h), err)
	}
	if h, err := scanHosts("10.0.0.0/22"); err != nil || len(h) != 1022 {
		t.Fatalf("/22: %d, %v", len(h), err)
	}
	if h, _ := scanHosts("10.0.0.4/31"); len(h) != 2 {
		t.Fatalf("/31: %v", h)
	}
}

// TestScanTCPCanceled ensures a canceled scan returns promptly with the
// context's error.
func TestScanTCPCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ScanTCP(ctx, "127.0.0.0/29", 9, ScanOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
