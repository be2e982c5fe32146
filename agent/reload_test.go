package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// reloadHead is the top of the harness's config (buildHarnessAt), so a
// reload sees only the printers change.
func (h *harness) reloadHead(defaults string) string {
	return fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:8631\"\napi_token = \"test-token-0123456789abcdef\"\n%s[defaults]\n%s\n", h.cfg.DataDir, harnessSpool, defaults)
}

// emulator starts one more emulated printer for the harness.
func (h *harness) emulator(name string, model printertest.Model) *printertest.Printer {
	h.t.Helper()
	p := printertest.New(printertest.Options{Name: name, Model: model})
	if err := p.ListenTCP(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { p.Close() })
	h.p[name] = p
	return p
}

// writeConfig writes the harness's config file: head and one [[printers]]
// table per block.
func (h *harness) writeConfig(defaults string, blocks ...string) {
	h.t.Helper()
	text := h.reloadHead(defaults) + strings.Join(blocks, "\n")
	if err := os.WriteFile(h.cfg.Path, []byte(text), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func printerBlock(name string, p *printertest.Printer, extra string) string {
	return fmt.Sprintf("[[printers]]\nname = %q\nurl = \"tcp://%s\"\n%s\n", name, p.Addr(), extra)
}

func (h *harness) reload() api.ReloadResult {
	h.t.Helper()
	res, err := h.a.Reload(context.Background())
	if err != nil {
		h.t.Fatalf("reload: %v (%+v)", err, res)
	}
	return res
}

// printedOnce checks that every task printed, each exactly once across the
// printers named, and returns how many were marked POSSIBLE DUPLICATE.
func (h *harness) printedOnce(tasks []string, printers ...string) {
	h.t.Helper()
	h.waitUntil("every task PRINTED", func() bool { return h.inState(spool.StatePrinted, tasks...) })
	seen := map[string]int{}
	for _, p := range printers {
		for _, no := range printedOrder(h.p[p].Tickets()) {
			seen[no]++
		}
	}
	for _, no := range tasks {
		if seen[no] != 1 {
			h.t.Errorf("%s printed %d times", no, seen[no])
		}
	}
}

// TestReloadAddsPrinterUnderLoad ensures a printer added by a reload takes
// tasks and prints them, while the running printer keeps printing what it
// was given before, during and after the reload: nothing lost.
func TestReloadAddsPrinterUnderLoad(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "kitchen", model: printertest.ModelEpson}}, "")
	bar := h.emulator("bar", printertest.ModelEpson)
	if _, _, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "B0_v1", Printer: "bar", Payload: []byte("x")}); !errors.Is(err, api.ErrUnknownPrinter) {
		t.Fatalf("submit to a printer not yet configured: %v", err)
	}
	h.writeConfig("", printerBlock("kitchen", h.p["kitchen"], ""), printerBlock("bar", bar, ""))
	var ks []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 30 {
			no := fmt.Sprintf("K%d_v1", i)
			h.submit(no, "kitchen")
			ks = append(ks, no)
		}
	}()
	res := h.reload()
	wg.Wait()
	if !slices.Equal(res.Added, []string{"bar"}) || len(res.Changed)+len(res.Removed)+len(res.RestartNeeded) != 0 {
		t.Fatalf("reload result %+v", res)
	}
	var bs []string
	for i := range 5 {
		no := fmt.Sprintf("B%d_v1", i)
		h.submit(no, "bar")
		bs = append(bs, no)
	}
	h.printedOnce(bs, "bar")
	h.printedOnce(ks, "kitchen")
	if got := printedOrder(h.p["kitchen"].Tickets()); !slices.Equal(got, ks) {
		t.Errorf("kitchen printed %v, want %v", got, ks)
	}
}

// TestReloadChangesPrinterURL ensures a printer whose url changes while
// tasks queue for it prints every task exactly once across the old and the
// new device: the job in flight finishes at the old one, the rest follow
// at the new one.
func TestReloadChangesPrinterURL(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "kitchen", model: printertest.ModelEpson}}, "")
	old := h.p["kitchen"]
	moved := h.emulator("kitchen2", printertest.ModelEpson)
	oldLane := h.a.lane("kitchen")
	// A first ticket, so the device has probed the printer before the
	// proof below is held.
	h.submit("W_v1", "kitchen")
	h.waitTask("W_v1", spool.StatePrinted)
	// The first job's completion proof is held back: it is in flight when
	// the reload comes, and must finish at the old device, once.
	old.HoldProcessID(1)
	var tasks []string
	for i := range 20 {
		no := fmt.Sprintf("K%d_v1", i)
		h.submit(no, "kitchen")
		tasks = append(tasks, no)
	}
	h.waitTask("K0_v1", spool.StateSending)
	// SENDING is recorded before the bytes go out: wait until the printer
	// holds the job's proof, so the job is in flight when the reload comes.
	// The emulator is another goroutine with no event to wait on: poll it,
	// bounded.
	for deadline := time.Now().Add(waitLimit); old.HeldProcessIDs() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first job's proof never reached the printer")
		}
	}
	h.writeConfig("", printerBlock("kitchen", moved, ""))
	resc := make(chan api.ReloadResult, 1)
	go func() {
		res, err := h.a.Reload(context.Background())
		if err != nil {
			t.Errorf("reload: %v", err)
		}
		resc <- res
	}()
	for i := 20; i < 40; i++ {
		no := fmt.Sprintf("K%d_v1", i)
		h.submit(no, "kitchen")
		tasks = append(tasks, no)
	}
	// Once the new lane is in place the reload waits for the old one's job.
	deadline := time.Now().Add(waitLimit)
	for h.a.lane("kitchen") == oldLane && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if old.ReleaseProcessID() != 1 {
		t.Fatal("the first job's proof was not held")
	}
	res := <-resc
	if !slices.Equal(res.Changed, []string{"kitchen"}) {
		t.Fatalf("reload result %+v", res)
	}
	h.printedOnce(tasks, "kitchen", "kitchen2")
	if got := printedOrder(old.Tickets()); !slices.Equal(got, []string{"W_v1", "K0_v1"}) {
		t.Errorf("old url printed %v, want the job in flight only", got)
	}
	if got := printedOrder(moved.Tickets()); !slices.Equal(got, tasks[1:]) {
		t.Errorf("new url printed %v, want %v", got, tasks[1:])
	}
}

// TestReloadRemovesPrinter ensures a removed printer's waiting tasks print
// at its backup with the FAILOVER banner, a removed printer without backup
// keeps its tasks waiting with reason PRINTER_REMOVED (never lost, never
// printed), intake for either answers unknown_printer, and the waiting
// tasks print once the printer is added back.
func TestReloadRemovesPrinter(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "kitchen", model: printertest.ModelEpson, extra: `backup = "bar"`, faults: []printertest.FaultKind{printertest.FaultOffline}},
		{name: "bar", model: printertest.ModelEpson},
		{name: "front", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultOffline}},
	}, `failover_after = "1h"`)
	h.waitPrinter("kitchen", "OFFLINE")
	h.waitPrinter("front", "OFFLINE")
	var ks, fs []string
	for i := range 5 {
		k, f := fmt.Sprintf("K%d_v1", i), fmt.Sprintf("F%d_v1", i)
		h.submit(k, "kitchen")
		h.submit(f, "front")
		ks, fs = append(ks, k), append(fs, f)
	}
	h.waitUntil("tasks parked", func() bool { return h.inState(spool.StateParked, append(ks, fs...)...) })
	h.writeConfig(`failover_after = "1h"`, printerBlock("bar", h.p["bar"], ""))
	res := h.reload()
	if !slices.Equal(res.Removed, []string{"kitchen", "front"}) {
		t.Fatalf("reload result %+v", res)
	}
	h.printedOnce(ks, "bar")
	for _, tk := range h.p["bar"].Tickets() {
		if !strings.Contains(tk.Text(), "FAILOVER kitchen") {
			t.Errorf("moved ticket lacks the FAILOVER banner:\n%s", tk.Text())
		}
	}
	want := spool.StateParked
	if spool.CanTransition(spool.StateParked, spool.StateHeld) {
		want = spool.StateHeld
	}
	for _, no := range fs {
		tk, err := h.sp.Get(no)
		if err != nil || tk.State != want || tk.Reason != ReasonPrinterRemoved {
			t.Fatalf("%s after its printer was removed: %v %+v", no, err, tk)
		}
	}
	for _, p := range []string{"kitchen", "front"} {
		if _, _, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "X_" + p, Printer: p, Payload: []byte("x")}); !errors.Is(err, api.ErrUnknownPrinter) {
			t.Errorf("submit to removed %s: %v", p, err)
		}
	}
	if n := len(h.p["front"].Tickets()); n != 0 {
		t.Fatalf("front printed %d", n)
	}
	// Back with paper and power: the waiting tasks print, once.
	h.p["front"].SetFault(printertest.FaultOffline, false)
	h.writeConfig(`failover_after = "1h"`, printerBlock("bar", h.p["bar"], ""), printerBlock("front", h.p["front"], ""))
	if res := h.reload(); !slices.Equal(res.Added, []string{"front"}) {
		t.Fatalf("re-add: %+v", res)
	}
	h.printedOnce(fs, "front")
}

// TestReloadRefusesBadConfig ensures a config with errors changes nothing:
// the errors come back, and the running printer still prints.
func TestReloadRefusesBadConfig(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "kitchen", model: printertest.ModelEpson}}, "")
	for _, bad := range []string{
		printerBlock("kitchen", h.p["kitchen"], `backup = "nowhere"`),
		"[[printers]]\nname = \"kitchen\"\nurl = \"tcp://\n",
		printerBlock("kitchen", h.p["kitchen"], "") + "[[printers]]\nname = \"kitchen\"\nurl = \"tcp://127.0.0.1:1\"\n",
	} {
		h.writeConfig("", bad)
		res, err := h.a.Reload(context.Background())
		if !errors.Is(err, api.ErrConfigRefused) || len(res.Errors) == 0 || res.Applied {
			t.Fatalf("bad config accepted: %v %+v\n%s", err, res, bad)
		}
	}
	h.submit("K1_v1", "kitchen")
	h.printedOnce([]string{"K1_v1"}, "kitchen")
	if got := h.a.Printers(); len(got) != 1 || got[0].Name != "kitchen" {
		t.Errorf("printers after a refused reload: %+v", got)
	}
}

// TestReloadsSerialize ensures reloads racing each other apply the file
// once: one adds the printer, the others find nothing to do.
func TestReloadsSerialize(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "kitchen", model: printertest.ModelEpson}}, "")
	bar := h.emulator("bar", printertest.ModelEpson)
	h.writeConfig("", printerBlock("kitchen", h.p["kitchen"], ""), printerBlock("bar", bar, ""))
	results := make([]api.ReloadResult, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = h.reload() }()
	}
	wg.Wait()
	added := 0
	for _, r := range results {
		added += len(r.Added)
	}
	if added != 1 {
		t.Fatalf("bar added %d times: %+v", added, results)
	}
	if got := h.a.Printers(); len(got) != 2 {
		t.Fatalf("printers: %+v", got)
	}
	h.submit("B1_v1", "bar")
	h.printedOnce([]string{"B1_v1"}, "bar")
}

// TestReloadReportsRestartSettings ensures settings only a restart applies
// are named and not applied.
func TestReloadReportsRestartSettings(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "kitchen", model: printertest.ModelEpson}}, "")
	text := strings.Replace(h.reloadHead(""), "127.0.0.1:8631", "127.0.0.1:8632", 1) + printerBlock("kitchen", h.p["kitchen"], "")
	if err := os.WriteFile(h.cfg.Path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	res := h.reload()
	if !slices.Equal(res.RestartNeeded, []string{"listen"}) || len(res.Added)+len(res.Changed)+len(res.Removed) != 0 {
		t.Fatalf("reload result %+v", res)
	}
}

// TestPreviewFollowsReload ensures the page's paper preview uses the
// printer as reloaded: kitchen changed from 80 mm to 58 mm paper is drawn
// 32 columns wide, as it now prints, not with its start-up profile.
func TestPreviewFollowsReload(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "kitchen", model: printertest.ModelEpson}}, "")
	task := &spool.Task{TaskNo: "P_v1", Printer: "kitchen", Document: []byte(`{"lines":[{"text":"FRIED RICE"}]}`)}
	before, err := h.a.Preview(task)
	if err != nil {
		t.Fatal(err)
	}
	h.writeConfig("", printerBlock("kitchen", h.p["kitchen"], `profile = "epson-58"`))
	if res := h.reload(); len(res.Changed) != 1 {
		t.Fatalf("reload: %+v", res)
	}
	after, err := h.a.Preview(task)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(before), "paper-48") || !strings.Contains(string(after), "paper-32") {
		t.Errorf("preview before the reload %.80q, after %.80q; want 48 then 32 columns", before, after)
	}
}

// TestReloadHandOnWaitsOnAgentClock ensures a removed printer's task whose
// move to the backup the spool could not record is tried again on the
// agent's clock, as every other retry is: the reload waits for that clock
// to move, not for the wall clock, and the task then prints at the backup.
func TestReloadHandOnWaitsOnAgentClock(t *testing.T) {
	fault := newCommitFault()
	clock := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), spool.Options{FailCommit: fault.check}, clock, []printerSpec{
		{name: "kitchen", model: printertest.ModelEpson, extra: `backup = "bar"`, faults: []printertest.FaultKind{printertest.FaultOffline}},
		{name: "bar", model: printertest.ModelEpson},
	}, `failover_after = "1h"`)
	h.waitPrinter("kitchen", "OFFLINE")
	h.submit("K1_v1", "kitchen")
	h.waitUntil("K1_v1 parked", func() bool { return h.inState(spool.StateParked, "K1_v1") })
	h.writeConfig(`failover_after = "1h"`, printerBlock("bar", h.p["bar"], ""))
	// The first commit of the reload is the sweep's move of K1_v1 to bar.
	fault.arm(0)
	resc := make(chan api.ReloadResult, 1)
	go func() {
		res, err := h.a.Reload(context.Background())
		if err != nil {
			t.Errorf("reload: %v", err)
		}
		resc <- res
	}()
	<-fault.fired
	// The retry waits a second on the agent's clock: a timer due by then is
	// armed, and the reload goes on only once the clock passes it.
	armed := make(chan struct{})
	go func() { clock.WaitTimer(clock.Now().Add(time.Second)); close(armed) }()
	select {
	case <-armed:
	case res := <-resc:
		t.Fatalf("the reload went on without the agent's clock moving: %+v", res)
	case <-time.After(waitLimit):
		t.Fatal("no retry timer was armed on the agent's clock")
	}
	var res api.ReloadResult
	h.advanceUntil("the reload returned", time.Second, func() bool {
		select {
		case res = <-resc:
			return true
		default:
			return false
		}
	})
	if !slices.Equal(res.Removed, []string{"kitchen"}) || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "1 waiting tasks moved") {
		t.Fatalf("reload result %+v", res)
	}
	h.printedOnce([]string{"K1_v1"}, "bar")
}
