package escpos_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// checkOpts are CheckPrinter options for the emulator: short silences, so a
// probe of a printer that lacks a command costs little, and a timeout that
// a loaded machine meets easily.
func checkOpts(expectAnswers bool) escpos.CheckOptions {
	so := testSession
	so.ExpectAnswers = expectAnswers
	return escpos.CheckOptions{Session: so, Timeout: 5 * time.Second}
}

// closedAddr is a loopback address nobody listens on any more.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestCheckPrinterStates ensures CheckPrinter reports each printer's real
// state and probed capabilities over a real socket: a ready Epson with its
// process-id barrier and identity, paper out and cover open from the status,
// a status-only model, a one-way printer that is reachable (ready, one-way)
// or, when its profile promises answers, not answering, a stalled printer,
// and an address where nothing listens (offline, with the dial error).
func TestCheckPrinterStates(t *testing.T) {
	type want struct {
		health             escpos.Health
		realTime, transmit bool
		processID, oneWay  bool
		inOrderProbed      bool
		model              string
		errIs              error
		errHas             string
	}
	cases := []struct {
		name   string
		model  printertest.Model
		fault  printertest.FaultKind
		expect bool
		want   want
	}{
		{"epson ready", printertest.ModelEpson, "", true,
			want{health: escpos.HealthReady, realTime: true, transmit: true, processID: true, inOrderProbed: true, model: "TM-T88VI"}},
		{"clone ready", printertest.ModelClone, "", true,
			want{health: escpos.HealthReady, realTime: true, transmit: true, inOrderProbed: true, model: "POS-80C"}},
		{"epson paper out", printertest.ModelEpson, printertest.FaultPaperOut, true,
			want{health: escpos.HealthPaperOut, realTime: true}},
		{"epson cover open", printertest.ModelEpson, printertest.FaultCoverOpen, true,
			want{health: escpos.HealthCoverOpen, realTime: true}},
		{"status-only ready", printertest.ModelStatusOnly, "", true,
			want{health: escpos.HealthReady, realTime: true, inOrderProbed: true}},
		{"one-way reachable", printertest.ModelOneWay, "", false,
			want{health: escpos.HealthReady, oneWay: true, inOrderProbed: true}},
		{"one-way but answers promised", printertest.ModelOneWay, "", true,
			want{health: escpos.HealthNotAnswering, errIs: escpos.ErrNoAnswer, errHas: "connected, but no answer"}},
		{"epson stalled", printertest.ModelEpson, printertest.FaultStall, true,
			want{health: escpos.HealthNotAnswering, errIs: escpos.ErrNoAnswer}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := startPrinter(t, printertest.Options{Model: c.model})
			if c.fault != "" {
				if err := p.SetFault(c.fault, true); err != nil {
					t.Fatal(err)
				}
			}
			r := escpos.CheckPrinter(ctxFor(t, 10*time.Second), tcpDial(p.Addr()), checkOpts(c.expect))
			// The check leaves no connection open: the printer may serve
			// only one, and the agent or another tool needs it. (A stalled
			// printer reads nothing, so it cannot see the close.)
			if c.fault != printertest.FaultStall {
				if err := p.WaitConnections(ctxFor(t, 5*time.Second), 0); err != nil {
					t.Errorf("connection left open: %v", err)
				}
			}
			w := c.want
			if r.Health != w.health {
				t.Fatalf("health %q (err %v, status %v), want %q", r.Health, r.Err, r.Status, w.health)
			}
			if w.errIs == nil && r.Err != nil {
				t.Errorf("unexpected error %v", r.Err)
			}
			if w.errIs != nil && (!errors.Is(r.Err, w.errIs) || !strings.Contains(r.Err.Error(), w.errHas)) {
				t.Errorf("err %v, want %v containing %q", r.Err, w.errIs, w.errHas)
			}
			if w.errIs != nil {
				return
			}
			got := want{health: r.Health, realTime: r.Caps.RealTime, transmit: r.Caps.TransmitStatus, processID: r.Caps.ProcessID,
				oneWay: r.OneWay(), inOrderProbed: r.Caps.InOrderProbed, model: r.Caps.Model}
			if !r.Probed || got != w {
				t.Errorf("probed %v, got %+v, want %+v", r.Probed, got, w)
			}
			if w.realTime != r.Status.Has(1) {
				t.Errorf("status %v: answered DLE EOT 1 = %v, want %v", r.Status, r.Status.Has(1), w.realTime)
			}
		})
	}
}

// TestCheckPrinterOffline ensures an address from a closed listener is
// offline with the dial error, and nothing is reported as probed.
func TestCheckPrinterOffline(t *testing.T) {
	addr := closedAddr(t)
	r := escpos.CheckPrinter(ctxFor(t, 10*time.Second), tcpDial(addr), checkOpts(true))
	if r.Health != escpos.HealthOffline || r.Err == nil || !strings.Contains(r.Err.Error(), addr) || r.Probed {
		t.Errorf("health %q err %v probed %v, want offline with the dial error naming %s", r.Health, r.Err, r.Probed, addr)
	}
	var op *net.OpError
	if !errors.As(r.Err, &op) || op.Op != "dial" {
		t.Errorf("err %v (%T) is not the dial error", r.Err, r.Err)
	}
}

// TestCheckPrinterTimeout ensures one check never outlasts its Timeout,
// even when the printer's silence would take longer to be sure of.
func TestCheckPrinterTimeout(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	p.SetFault(printertest.FaultStall, true)
	opts := checkOpts(true)
	opts.Session.ProbeTimeout = 30 * time.Second
	opts.Timeout = 300 * time.Millisecond
	start := time.Now()
	r := escpos.CheckPrinter(ctxFor(t, 10*time.Second), tcpDial(p.Addr()), opts)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("check took %v with a 300ms timeout", took)
	}
	if r.Health != escpos.HealthNotAnswering || !errors.Is(r.Err, context.DeadlineExceeded) || !strings.Contains(r.Err.Error(), "within 300ms") {
		t.Errorf("health %q err %v, want not answering within 300ms", r.Health, r.Err)
	}
}

// countingDial dials addr and tracks how many of its connections are open
// at once.
type countingDial struct {
	addr      string
	mu        sync.Mutex
	open, max int
	dials     int
}

type countedConn struct {
	net.Conn
	d    *countingDial
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.d.mu.Lock()
		c.d.open--
		c.d.mu.Unlock()
	})
	return c.Conn.Close()
}

func (d *countingDial) dial(ctx context.Context) (escpos.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", d.addr)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials++
	if err != nil {
		return nil, err
	}
	d.open++
	d.max = max(d.max, d.open)
	return &countedConn{Conn: c, d: d}, nil
}

// TestCheckPrintersParallel ensures CheckPrinters checks printers at the
// same time (so the total is one printer's timeout, not their sum), never
// more than its concurrency at once, closes every connection, and keeps the
// results in order.
func TestCheckPrintersParallel(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	p.SetFault(printertest.FaultStall, true)
	opts := checkOpts(true)
	opts.Session.ProbeTimeout = 30 * time.Second
	opts.Timeout = time.Second
	for _, tc := range []struct{ checks, concurrency, wantMax int }{{4, 0, 4}, {4, 2, 2}} {
		d := &countingDial{addr: p.Addr()}
		checks := make([]escpos.PrinterCheck, tc.checks)
		for i := range checks {
			checks[i] = escpos.PrinterCheck{Dial: d.dial, Options: opts}
		}
		start := time.Now()
		res := escpos.CheckPrinters(ctxFor(t, 20*time.Second), checks, tc.concurrency)
		took := time.Since(start)
		for i, r := range res {
			if r.Health != escpos.HealthNotAnswering {
				t.Errorf("concurrency %d: check %d: %q %v", tc.concurrency, i, r.Health, r.Err)
			}
		}
		d.mu.Lock()
		if d.max != tc.wantMax || d.open != 0 || d.dials != tc.checks {
			t.Errorf("concurrency %d: %d connections at most (want %d), %d left open, %d dials", tc.concurrency, d.max, tc.wantMax, d.open, d.dials)
		}
		d.mu.Unlock()
		// Sequential checks would take tc.checks seconds.
		if rounds := tc.checks / tc.wantMax; took >= time.Duration(rounds+1)*time.Second+time.Second/2 {
			t.Errorf("concurrency %d: took %v for %d rounds of 1s", tc.concurrency, took, rounds)
		}
	}

	// Order: each result belongs to its own printer.
	ready := startPrinter(t, printertest.Options{})
	paper := startPrinter(t, printertest.Options{})
	paper.SetFault(printertest.FaultPaperOut, true)
	res := escpos.CheckPrinters(ctxFor(t, 10*time.Second), []escpos.PrinterCheck{
		{Dial: tcpDial(paper.Addr()), Options: checkOpts(true)},
		{Dial: tcpDial(closedAddr(t)), Options: checkOpts(true)},
		{Dial: tcpDial(ready.Addr()), Options: checkOpts(true)},
	}, 0)
	if len(res) != 3 || res[0].Health != escpos.HealthPaperOut || res[1].Health != escpos.HealthOffline || res[2].Health != escpos.HealthReady {
		t.Errorf("results out of order: %+v", res)
	}
}

// TestCheckPrintersCanceled ensures a caller that gave up gets every
// printer as not probed, without a connection being made.
func TestCheckPrintersCanceled(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	d := &countingDial{addr: p.Addr()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := escpos.CheckPrinters(ctx, []escpos.PrinterCheck{{Dial: d.dial}, {Dial: d.dial}}, 1)
	for i, r := range res {
		if r.Health != escpos.HealthNotProbed || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("check %d: %q %v, want not probed", i, r.Health, r.Err)
		}
	}
	if d.max != 0 {
		t.Errorf("%d connections made after cancel", d.max)
	}
}
