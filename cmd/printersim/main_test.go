package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunPrintsTickets ensures printersim starts the printers asked for and
// draws a ticket sent to one of them, then exits cleanly when stopped.
func TestRunPrintsTickets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	var out lockedBuffer
	ready := make(chan *printertest.Fleet, 1)
	code := make(chan int, 1)
	go func() {
		code <- run(runCtx, []string{"-n", "3", "-model", "epson,oneway", "-base-port", "0", "-control", "127.0.0.1:0"}, &out, io.Discard, ready)
	}()
	var fleet *printertest.Fleet
	select {
	case fleet = <-ready:
	case c := <-code:
		t.Fatalf("exited %d", c)
	}
	if len(fleet.Printers) != 3 || fleet.Printers[2].Model() != printertest.ModelEpson || fleet.Printers[1].Model() != printertest.ModelOneWay {
		t.Fatalf("printers %v", fleet.Printers)
	}
	c, err := net.Dial("tcp", fleet.Printers[1].Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("ORDER 42\n\x1dV\x00"))
	c.Close()
	if _, err := fleet.Printers[1].WaitTickets(ctx, 1); err != nil {
		t.Fatal(err)
	}
	stop()
	if got := <-code; got != 0 {
		t.Fatalf("exit %d", got)
	}
	s := out.String()
	for _, want := range []string{"ORDER 42", "[CUT]", "printer1 #1", "control  http://127.0.0.1:"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestRunUsage ensures bad flags exit with code 2 and a non-loopback control
// address is refused.
func TestRunUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"-model", "laser"}, {"-n", "-1"}, {"extra"}, {"-bogus"}, {"-dbcs", "euc-kr"}} {
		if got := run(ctx, args, io.Discard, io.Discard, nil); got != 2 {
			t.Errorf("%q: exit %d, want 2", args, got)
		}
	}
	if got := run(ctx, []string{"-base-port", "0", "-control", "0.0.0.0:0"}, io.Discard, io.Discard, nil); got != 1 {
		t.Errorf("non-loopback control: exit %d, want 1", got)
	}
}

// TestRunBig5 ensures -dbcs gives the clones a Big5 font: a clone powers on
// in Kanji mode and draws Big5 text as traditional Chinese.
func TestRunBig5(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	ready := make(chan *printertest.Fleet, 1)
	code := make(chan int, 1)
	go func() {
		code <- run(runCtx, []string{"-model", "clone", "-dbcs", "big5", "-base-port", "0", "-control", "", "-quiet"}, io.Discard, io.Discard, ready)
	}()
	var fleet *printertest.Fleet
	select {
	case fleet = <-ready:
	case c := <-code:
		t.Fatalf("exited %d", c)
	}
	c, err := net.Dial("tcp", fleet.Printers[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("\xae\xe0 12\n\x1dV\x00")) // 桌 in Big5
	c.Close()
	tk, err := fleet.Printers[0].WaitTickets(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !tk[0].Contains("桌 12") {
		t.Errorf("a Big5 clone drew:\n%s", tk[0].Text())
	}
	stop()
	if got := <-code; got != 0 {
		t.Fatalf("exit %d", got)
	}
}
