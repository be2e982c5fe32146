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
	"time"

	"printgate/cmd/printgate/internal/probe"
	"printgate/drivers"
	"printgate/drivers/printertest"
)

// testEnv discovers one fake serial port, one fake USB printer and one fake
// Windows printer queue, and scans for real (loopback only in these tests).
func testEnv() printersEnv {
	return printersEnv{
		configured: func(string, bool) ([]probe.Printer, error) {
			return []probe.Printer{{Name: "kitchen", URL: "tcp://127.0.0.2:9100"}, {Name: "bar", URL: "serial:///dev/ttyUSB0?flow=hardware"}}, nil
		},
		serial: func() ([]drivers.Found, error) {
			return []drivers.Found{{Kind: drivers.SchemeSerial, URL: "serial:///dev/ttyUSB0", Name: "/dev/ttyUSB0", VendorID: 0x0403, ProductID: 0x6001, Product: "FT232R USB UART"}}, nil
		},
		usb: func() ([]drivers.Found, error) {
			return []drivers.Found{{Kind: drivers.SchemeUSB, URL: "usb://04b8:0202", Name: "/dev/usb/lp0", VendorID: 0x04b8, ProductID: 0x0202, Model: "EPSON TM-T20II"}}, nil
		},
		spooler: func() ([]drivers.Found, error) {
			return []drivers.Found{{Kind: drivers.SchemeWinspool, URL: "winspool://Receipt 80%25", Name: "USB001", Model: "EPSON TM-T20II Receipt"}}, nil
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
	code := printersCmd(context.Background(), testEnv(), []string{"--no-probe", "--scan", "127.0.0.2/32", "--port", fmt.Sprint(port), "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var rep probe.JSONReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if len(rep.Configured) != 2 || rep.Configured[0].Error != "" || !strings.Contains(rep.Configured[1].Error, `unknown flow mode "hardware"`) {
		t.Errorf("configured %+v", rep.Configured)
	}
	if c := rep.Configured; len(c) == 2 && (c[0].State != "not_probed" || c[1].State != "bad_url") {
		t.Errorf("states %q %q, want not_probed and bad_url", c[0].State, c[1].State)
	}
	if len(rep.Discovered) != 4 {
		t.Fatalf("discovered %+v", rep.Discovered)
	}
	if q := rep.Discovered[2]; q.Kind != "winspool" || q.URL != "winspool://Receipt 80%25" || q.Device != "USB001" || q.Model != "EPSON TM-T20II Receipt" {
		t.Errorf("windows printer queue %+v", q)
	}
	tcp := rep.Discovered[3]
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
	if code := printersCmd(context.Background(), testEnv(), []string{"--no-probe", "--scan", "127.0.0.0/29", "--port", fmt.Sprint(port)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"kitchen", "not probed", "bad url", `unknown flow mode "hardware"`,
		"serial:///dev/ttyUSB0", "0403:6001, FT232R USB UART",
		"usb://04b8:0202", "EPSON TM-T20II, 04b8:0202",
		"winspool://Receipt 80%25", "USB001", "EPSON TM-T20II Receipt",
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
		{[]string{"--probe-timeout", "0s"}, 2, "bad --probe-timeout 0s"},
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"--scan", "10.0.0.0/8"}, 2, "scan at most a /22"},
		{[]string{"--scan", "kitchen"}, 2, "bad network"},
		{[]string{"--scan", "203.0.113.0/24"}, 2, "203.0.113.0/24 is not a private network"},
		{[]string{"--scan", "8.8.8.8"}, 2, "8.8.8.8 is not a private network"},
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
	if code := printersCmd(context.Background(), env, []string{"--no-probe"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(errb.String(), "warning: listing serial ports: enumerator broke") || !strings.Contains(out.String(), "usb://04b8:0202") {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
}

// TestPrintersRegistered ensures the real command is wired into dispatch
// and runs on this machine without a scan (and without probing whatever
// printers a config on this machine names).
func TestPrintersRegistered(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"printers", "--json", "--no-probe"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep probe.JSONReport
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
	os.WriteFile(cfg, []byte("data_dir = \"d\"\napi_token = \"x-0123456789abcdef0123456\"\n[[printers]]\nname = \"kitchen\"\nurl = \"tcp://127.0.0.1:9100\"\n"+
		"[[printers]]\nname = \"bar\"\nurl = \"tcp://127.0.0.1:9101\"\nprofile = \"oneway-80\"\n"), 0o600)
	got, err := probe.Load(cfg, true)
	if err != nil || len(got) != 2 || got[0].Name != "kitchen" || got[0].URL != "tcp://127.0.0.1:9100" {
		t.Fatalf("configured %+v %v", got, err)
	}
	// The probe reads silence as the agent would: a fault where the profile
	// promises answers, one-way where it does not.
	if !got[0].ExpectAnswers || got[1].ExpectAnswers {
		t.Errorf("expect answers: epson-80 %v, oneway-80 %v", got[0].ExpectAnswers, got[1].ExpectAnswers)
	}
	if _, err := probe.Load(filepath.Join(dir, "nope.toml"), true); err == nil {
		t.Error("a named config that does not exist was accepted")
	}
	if got, err := probe.Load(filepath.Join(dir, "nope.toml"), false); err != nil || len(got) != 0 {
		t.Errorf("missing default config: %v %v", got, err)
	}
}

// startEmulator runs an emulated printer on 127.0.0.1 with fault switched
// on (none when ""), and returns its printer URL.
func startEmulator(t *testing.T, model printertest.Model, fault printertest.FaultKind) (*printertest.Printer, string) {
	t.Helper()
	p := printertest.New(printertest.Options{Model: model})
	t.Cleanup(func() { p.Close() })
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	if fault != "" {
		if err := p.SetFault(fault, true); err != nil {
			t.Fatal(err)
		}
	}
	return p, "tcp://" + p.Addr()
}

// closedURL is a printer URL on 127.0.0.1 where nothing listens any more.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "tcp://" + addr
}

// envWith is testEnv with the given configured printers.
func envWith(list ...probe.Printer) printersEnv {
	env := testEnv()
	env.configured = func(string, bool) ([]probe.Printer, error) { return list, nil }
	return env
}

// TestPrintersProbe ensures `printers` by default shows each configured
// printer's real state and capabilities, in the table and in --json: a
// ready Epson, one out of paper, a closed port (offline with the dial
// error), a status-only model, a one-way printer (ready, one-way) and the
// same printer under a profile that promises answers (not answering). It
// prints nothing on any of them.
func TestPrintersProbe(t *testing.T) {
	ready, readyURL := startEmulator(t, printertest.ModelEpson, "")
	paper, paperURL := startEmulator(t, printertest.ModelEpson, printertest.FaultPaperOut)
	statusOnly, statusURL := startEmulator(t, printertest.ModelStatusOnly, "")
	oneway, onewayURL := startEmulator(t, printertest.ModelOneWay, "")
	offURL := closedURL(t)
	env := envWith(
		probe.Printer{Name: "kitchen", URL: readyURL, ExpectAnswers: true},
		probe.Printer{Name: "bar", URL: paperURL, ExpectAnswers: true},
		probe.Printer{Name: "pass", URL: offURL, ExpectAnswers: true},
		probe.Printer{Name: "cold", URL: statusURL, ExpectAnswers: true},
		probe.Printer{Name: "label", URL: onewayURL, ExpectAnswers: false},
		probe.Printer{Name: "silent", URL: onewayURL, ExpectAnswers: true},
	)

	var out, errb bytes.Buffer
	if code := printersCmd(context.Background(), env, []string{"--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var rep probe.JSONReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if len(rep.Configured) != 6 {
		t.Fatalf("configured %+v", rep.Configured)
	}
	c := rep.Configured
	type caps struct{ pid, transmit, rt, oneWay bool }
	capsOf := func(j probe.JSONConfigured) caps {
		if j.Capabilities == nil {
			return caps{}
		}
		return caps{j.Capabilities.ProcessID, j.Capabilities.TransmitStatus, j.Capabilities.RealTimeStatus, j.Capabilities.OneWay}
	}
	checks := []struct {
		i            int
		state        string
		caps         caps
		confirmation string
		reason       string
	}{
		{0, "ready", caps{pid: true, transmit: true, rt: true}, "printed", ""},
		{1, "paper_out", caps{rt: true}, "", ""},
		{2, "offline", caps{}, "", strings.TrimPrefix(offURL, "tcp://")},
		{3, "ready", caps{rt: true}, "delivered", ""},
		{4, "ready", caps{oneWay: true}, "delivered", ""},
		{5, "not_answering", caps{}, "", "no answer to a status query"},
	}
	for _, w := range checks {
		j := c[w.i]
		if j.State != w.state || capsOf(j) != w.caps || !strings.Contains(j.Reason, w.reason) || (w.reason == "") != (j.Reason == "") {
			t.Errorf("%s: state %q caps %+v reason %q, want %q %+v reason with %q", j.Name, j.State, capsOf(j), j.Reason, w.state, w.caps, w.reason)
		}
		if j.Capabilities != nil && j.Capabilities.Confirmation != w.confirmation {
			t.Errorf("%s: confirmation %q, want %q", j.Name, j.Capabilities.Confirmation, w.confirmation)
		}
	}
	if m := c[0].Capabilities; m == nil || m.Model != "TM-T88VI" || !m.InOrderProbed {
		t.Errorf("kitchen identity %+v", m)
	}
	if m := c[1].Capabilities; m == nil || m.InOrderProbed || !strings.Contains(c[1].Status, "paper-out") {
		t.Errorf("bar: caps %+v status %q: in-order answers cannot be known while out of paper", m, c[1].Status)
	}

	out.Reset()
	errb.Reset()
	if code := printersCmd(context.Background(), env, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	for name, want := range map[string][]string{
		"kitchen": {readyURL, "ready", `process-id barrier, transmit status, real-time status (jobs confirmed "printed")`, "EPSON TM-T88VI"},
		"bar":     {"paper out", "real-time status (in-order answers not probed while not ready)"},
		"pass":    {"offline", "connection refused", strings.TrimPrefix(offURL, "tcp://")},
		"cold":    {"ready", `real-time status (jobs confirmed "delivered")`},
		"label":   {"ready", `one-way (jobs confirmed "delivered")`},
		"silent":  {"not answering", "connected, but no answer to a status query"},
	} {
		for _, s := range want {
			if !strings.Contains(rows[name], s) {
				t.Errorf("row %q lacks %q", rows[name], s)
			}
		}
	}
	if strings.Contains(out.String(), " ok") {
		t.Errorf("a printer is still just \"ok\":\n%s", out.String())
	}
	for _, p := range []*printertest.Printer{ready, paper, statusOnly, oneway} {
		if n := len(p.Tickets()); n != 0 {
			t.Errorf("%s printed %d tickets while probed", p.Name(), n)
		}
	}
}

// TestPrintersNoProbe ensures --no-probe does not connect to any printer
// and says "not probed".
func TestPrintersNoProbe(t *testing.T) {
	p, url := startEmulator(t, printertest.ModelEpson, "")
	env := envWith(probe.Printer{Name: "kitchen", URL: url, ExpectAnswers: true})
	var out, errb bytes.Buffer
	if code := printersCmd(context.Background(), env, []string{"--no-probe"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "not probed") {
		t.Errorf("exit %d stdout %q", code, out.String())
	}
	out.Reset()
	if code := printersCmd(context.Background(), env, []string{"--no-probe", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rep probe.JSONReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Configured) != 1 || rep.Configured[0].State != "not_probed" || rep.Configured[0].Capabilities != nil {
		t.Errorf("%v: %s", err, out.String())
	}
	if n := p.Received(); n != 0 {
		t.Errorf("the printer received %d bytes with --no-probe", n)
	}
}

// TestPrintersProbeBounded ensures probing is bounded: printers that
// accept the connection and never answer are checked in parallel, each for
// at most --probe-timeout, so eight of them take about one timeout (0.3 s),
// not eight (2.4 s).
func TestPrintersProbeBounded(t *testing.T) {
	var list []probe.Printer
	for i := range 8 {
		_, url := startEmulator(t, printertest.ModelEpson, printertest.FaultStall)
		list = append(list, probe.Printer{Name: fmt.Sprint("p", i), URL: url, ExpectAnswers: true})
	}
	var out, errb bytes.Buffer
	start := time.Now()
	code := printersCmd(context.Background(), envWith(list...), []string{"--json", "--probe-timeout", "300ms"}, &out, &errb)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep probe.JSONReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Configured {
		if c.State != "not_answering" || !strings.Contains(c.Reason, "no answer within 300ms") {
			t.Errorf("%s: %q %q", c.Name, c.State, c.Reason)
		}
	}
	if took > 1500*time.Millisecond {
		t.Errorf("probing 8 silent printers with --probe-timeout 300ms took %v", took)
	}
}

// TestPrintersJSONNotHTMLEscaped ensures --json writes names and URLs as
// written: "&", "<" and ">" stay themselves instead of \u0026-escapes.
func TestPrintersJSONNotHTMLEscaped(t *testing.T) {
	env := envWith(probe.Printer{Name: "bar&grill", URL: "winspool://Bar & Grill <2>"})
	var out, errb bytes.Buffer
	if code := printersCmd(context.Background(), env, []string{"--json", "--no-probe"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	if !strings.Contains(s, `"name": "bar&grill"`) || !strings.Contains(s, `"url": "winspool://Bar & Grill <2>"`) || strings.Contains(s, `\u00`) {
		t.Errorf("escaped output:\n%s", s)
	}
	var rep probe.JSONReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Configured[0].URL != "winspool://Bar & Grill <2>" {
		t.Errorf("%v %+v", err, rep.Configured)
	}
}
