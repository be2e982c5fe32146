package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"printgate/drivers"
)

// testEnv discovers one fake serial port and one fake USB printer and scans
// for real (loopback only in these tests).
func testEnv() printersEnv {
	return printersEnv{
		configured: func(string, bool) ([]configuredPrinter, error) {
			return []configuredPrinter{{Name: "kitchen", URL: "tcp://127.0.0.2:9100"}, {Name: "bar", URL: "serial:///dev/ttyUSB0?flow=hardware"}}, nil
		},
		serial: func() ([]drivers.Found, error) {
			return []drivers.Found{{Kind: drivers.SchemeSerial, URL: "serial:///dev/ttyUSB0", Name: "/dev/ttyUSB0", VendorID: 0x0403, ProductID: 0x6001, Product: "FT232R USB UART"}}, nil
		},
		usb: func() ([]drivers.Found, error) {
			return []drivers.Found{{Kind: drivers.SchemeUSB, URL: "usb://04b8:0202", Name: "/dev/usb/lp0", VendorID: 0x04b8, ProductID: 0x0202, Model: "EPSON TM-T20II"}}, nil
		},
		scan: drivers.ScanTCP,
	}
}

// loopbackPrinter listens on 127.0.0.2 and answers DLE EOT 1 like an idle
// Epson. It returns the port.
func loopbackPrinter(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 3)
				if n, _ := c.Read(b); n == 3 {
					c.Write([]byte{0x16})
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPrintersJSON ensures --json lists configured printers (flagging bad
// URLs), discovered devices and scanned hosts, with scan progress on stderr.
func TestPrintersJSON(t *testing.T) {
	port := loopbackPrinter(t)
	var out, errb bytes.Buffer
	code := printersCmd(context.Background(), testEnv(), []string{"--scan", "127.0.0.2/32", "--port", fmt.Sprint(port), "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var rep jsonReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if len(rep.Configured) != 2 || rep.Configured[0].Error != "" || !strings.Contains(rep.Configured[1].Error, `unknown flow mode "hardware"`) {
		t.Errorf("configured %+v", rep.Configured)
	}
	if len(rep.Discovered) != 3 {
		t.Fatalf("discovered %+v", rep.Discovered)
	}
	tcp := rep.Discovered[2]
	if tcp.Kind != "tcp" || tcp.URL != fmt.Sprintf("tcp://127.0.0.2:%d", port) || tcp.Status != "16" {
		t.Errorf("scanned %+v", tcp)
	}
	if usb := rep.Discovered[1]; usb.VendorID != "04b8" || usb.Model != "EPSON TM-T20II" {
		t.Errorf("usb %+v", usb)
	}
	if !strings.Contains(errb.String(), "scanning 127.0.0.2/32: 1/1 hosts") {
		t.Errorf("no progress on stderr: %q", errb.String())
	}
}

// TestPrintersText ensures the table shows each discovered device with
// what identifies it.
func TestPrintersText(t *testing.T) {
	port := loopbackPrinter(t)
	var out, errb bytes.Buffer
	if code := printersCmd(context.Background(), testEnv(), []string{"--scan", "127.0.0.0/29", "--port", fmt.Sprint(port)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"kitchen", "bad url:",
		"serial:///dev/ttyUSB0", "0403:6001, FT232R USB UART",
		"usb://04b8:0202", "EPSON TM-T20II, 04b8:0202",
		fmt.Sprintf("tcp://127.0.0.2:%d", port), "answers ESC/POS status (16)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(errb.String(), "6/6 hosts") {
		t.Errorf("progress: %q", errb.String())
	}
}

// TestPrintersUsage ensures usage mistakes exit 2 with a message, help
// exits 0, and a network larger than a /22 is refused before any traffic.
func TestPrintersUsage(t *testing.T) {
	env := testEnv()
	env.scan = func(ctx context.Context, cidr string, port int, o drivers.ScanOptions) ([]drivers.Found, error) {
		if !strings.HasPrefix(cidr, "127.") {
			// Should validation ever break, a canceled context keeps the
			// scanner from dialing anything off this machine.
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		return drivers.ScanTCP(ctx, cidr, port, o)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "usage: printgate printers"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--port", "0"}, 2, "bad --port 0"},
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"--scan", "10.0.0.0/8"}, 2, "scan at most a /22"},
		{[]string{"--scan", "kitchen"}, 2, "bad network"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if code := printersCmd(context.Background(), env, tt.args, &out, &errb); code != tt.code || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", tt.args, code, errb.String(), tt.code, tt.want)
		}
	}
}

// TestPrintersDiscoveryWarning ensures one failing source is a warning and
// the rest is still listed.
func TestPrintersDiscoveryWarning(t *testing.T) {
	env := testEnv()
	env.serial = func() ([]drivers.Found, error) { return nil, errors.New("enumerator broke") }
	var out, errb bytes.Buffer
	if code := printersCmd(context.Background(), env, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(errb.String(), "warning: listing serial ports: enumerator broke") || !strings.Contains(out.String(), "usb://04b8:0202") {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
}

// TestPrintersRegistered ensures the real command is wired into dispatch
// and runs on this machine without a scan.
func TestPrintersRegistered(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"printers", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep jsonReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
}

// TestPrintersConfigured ensures `printers --config FILE` lists the config's
// printers, a named config that does not exist is an error, and a missing
// default config is not (the machine may not be set up yet).
func TestPrintersConfigured(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "printgate.toml")
	os.WriteFile(cfg, []byte("data_dir = \"d\"\napi_token = \"x-0123456789abcdef0123456\"\n[[printers]]\nname = \"kitchen\"\nurl = \"tcp://127.0.0.1:9100\"\n"), 0o600)
	got, err := loadConfigured(cfg, true)
	if err != nil || len(got) != 1 || got[0].Name != "kitchen" || got[0].URL != "tcp://127.0.0.1:9100" {
		t.Fatalf("configured %+v %v", got, err)
	}
	if _, err := loadConfigured(filepath.Join(dir, "nope.toml"), true); err == nil {
		t.Error("a named config that does not exist was accepted")
	}
	if got, err := loadConfigured(filepath.Join(dir, "nope.toml"), false); err != nil || len(got) != 0 {
		t.Errorf("missing default config: %v %v", got, err)
	}
}
