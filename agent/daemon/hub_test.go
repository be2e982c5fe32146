package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"printgate/agent"
	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// testAgent is a running agent with one emulated printer "k", whose
// events feed a page backend's hub as RunService wires them.
type testAgent struct {
	t    *testing.T
	a    *agent.Agent
	p    *printertest.Printer
	page pageBackend
}

// startAgent runs an agent for the test's life.
func startAgent(t *testing.T) *testAgent {
	t.Helper()
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "printgate.toml"), []byte(fmt.Sprintf("data_dir = %q\napi_token = \"tok-0123456789abcdef01234\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n", dir, p.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spool.Open(filepath.Join(dir, "spool.db"), spoolOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	changes := &hub{}
	a, err := agent.New(cfg, sp, agent.Options{Logger: testLogger(), Observe: changes.observe})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-a.Ready():
	case <-time.After(waitLimit):
		t.Fatal("the agent never got ready")
	}
	return &testAgent{t: t, a: a, p: p, page: pageBackend{Agent: a, changes: changes}}
}

// submit queues a one-line ticket on printer.
func (h *testAgent) submit(taskNo, printer string) {
	h.t.Helper()
	nt := spool.NewTask{TaskNo: taskNo, Printer: printer, Document: []byte(fmt.Sprintf(`{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}`, taskNo))}
	if _, dup, err := h.a.Submit(context.Background(), nt); err != nil || dup {
		h.t.Fatalf("submit %s: dup=%v err=%v", taskNo, dup, err)
	}
}

// waitPrinter waits until printer reports state; the agent is another
// goroutine, so poll, bounded.
func (h *testAgent) waitPrinter(printer, state string) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		for _, p := range h.a.Printers() {
			if p.Name == printer && p.State == state {
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("printer %s never %s: %+v", printer, state, h.a.Printers())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSubscribeSeesChanges ensures a subscriber hears a task's transitions
// and a printer's state change, and that its channel closes when its
// context ends.
func TestSubscribeSeesChanges(t *testing.T) {
	h := startAgent(t)
	h.waitPrinter("k", "READY")
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.page.Subscribe(ctx)
	h.submit("S_v1", "k")
	want := api.Change{Kind: "task", Printer: "k", TaskNo: "S_v1", State: "PRINTED"}
	limit := time.After(waitLimit)
	for seen := false; !seen; {
		select {
		case c := <-ch:
			seen = c == want
		case <-limit:
			t.Fatalf("no %+v", want)
		}
	}
	h.p.SetFault(printertest.FaultPaperOut, true)
	h.a.Refresh("k")
	want = api.Change{Kind: "printer", Printer: "k", State: "PAPER_OUT"}
	for seen := false; !seen; {
		select {
		case c := <-ch:
			seen = c == want
		case <-limit:
			t.Fatalf("no %+v", want)
		}
	}
	cancel()
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-limit:
			t.Fatal("the channel stayed open after its context ended")
		}
	}
}

// TestHubNeverBlocks ensures a subscriber that does not read costs the
// publisher nothing: changes past its buffer are dropped, not waited for,
// and subscribers beyond the bound get a closed channel.
func TestHubNeverBlocks(t *testing.T) {
	var h hub
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := h.subscribe(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10 * subscriberBuffer {
			h.publish(api.Change{Kind: "task", TaskNo: fmt.Sprint(i)})
		}
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("publish blocked on a subscriber that does not read")
	}
	if len(slow) != subscriberBuffer || h.dropped.Load() != 9*subscriberBuffer {
		t.Errorf("buffered %d, dropped %d", len(slow), h.dropped.Load())
	}
	if c := <-slow; c.TaskNo != "0" {
		t.Errorf("first change %+v, want the oldest kept", c)
	}
	subs := []<-chan api.Change{slow}
	for range maxSubscribers - 1 {
		subs = append(subs, h.subscribe(ctx))
	}
	if _, open := <-h.subscribe(ctx); open {
		t.Error("a subscriber past the bound got an open channel")
	}
	cancel()
	for _, ch := range subs {
		// Drain what is buffered; each must then close.
		for range ch {
		}
	}
	h.mu.Lock()
	n := len(h.subs)
	h.mu.Unlock()
	if n != 0 {
		t.Errorf("%d subscribers left after their contexts ended", n)
	}
}

// TestChangeOf ensures each event the agent reports beyond tasks and
// printers reaches the live view as the change the page reacts to, and a
// spool write being retried does not.
func TestChangeOf(t *testing.T) {
	for _, c := range []struct {
		e    agent.Event
		want api.Change
		ok   bool
	}{
		{agent.Event{Health: true}, api.Change{Kind: "health"}, true},
		{agent.Event{Link: true}, api.Change{Kind: "link"}, true},
		{agent.Event{Link: true, LinkState: "online"}, api.Change{Kind: "link", State: "online"}, true},
		{agent.Event{Printer: "k", RawRefused: "the spool is full"}, api.Change{Kind: "raw_refused", Printer: "k", Detail: "the spool is full"}, true},
		{agent.Event{Printer: "k", RawWaiting: true, RawWaitingWhy: "the spool is full"}, api.Change{Kind: "raw_waiting", Printer: "k", Detail: "the spool is full"}, true},
		{agent.Event{Printer: "k", RawWaiting: true}, api.Change{Kind: "raw_waiting", Printer: "k"}, true},
		{agent.Event{Printer: "k", Switch: true, FailoverTo: "b"}, api.Change{Kind: "printer", Printer: "k"}, true},
		{agent.Event{Printer: "k", State: "PAPER_OUT"}, api.Change{Kind: "printer", Printer: "k", State: "PAPER_OUT"}, true},
		{agent.Event{Printer: "k", Task: &spool.Task{TaskNo: "A_v1", State: spool.StateQueued}, Err: fmt.Errorf("disk full")}, api.Change{}, false},
	} {
		if got, ok := changeOf(c.e); got != c.want || ok != c.ok {
			t.Errorf("changeOf(%+v) = %+v %v, want %+v %v", c.e, got, ok, c.want, c.ok)
		}
	}
}
