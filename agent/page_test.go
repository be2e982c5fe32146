package agent

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/agent/logring"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestRetryHeldPrintsOnceMarked ensures a HELD task retried by two managers
// at once is queued again by one retry only, the other being told it is no
// longer HELD, and comes out once, under the POSSIBLE DUPLICATE banner.
func TestRetryHeldPrintsOnceMarked(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson, extra: `on_unknown = "hold"`}}, "")
	h.waitPrinter("k", "READY")
	// The pre-send health check is a few bytes; the drop lands inside the job.
	h.p["k"].FaultAfter(printertest.FaultDrop, 40)
	h.submit("H_v1", "k")
	h.waitTask("H_v1", spool.StateHeld)
	h.settle("k")

	var wg sync.WaitGroup
	results := make([]error, 2)
	tasks := make([]*spool.Task, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tasks[i], results[i] = h.a.Retry(context.Background(), "H_v1", "")
		}()
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for i, err := range results {
		switch {
		case err == nil:
			ok++
			if tasks[i].State != spool.StateQueued || !tasks[i].PossibleDuplicate || tasks[i].TaskNo != "H_v1" {
				t.Errorf("retry answered %+v, want H_v1 QUEUED possible_duplicate", tasks[i])
			}
		case errors.Is(err, api.ErrConflict):
			conflicts++
		default:
			t.Errorf("retry: %v", err)
		}
	}
	if ok != 1 || conflicts != 1 {
		t.Fatalf("%d retries succeeded and %d conflicted, want 1 and 1: %v", ok, conflicts, results)
	}
	got := h.waitTask("H_v1", spool.StatePrinted)
	if !got.PossibleDuplicate {
		t.Errorf("printed without possible_duplicate: %+v", got)
	}
	h.tickets("k", 1)
	h.settle("k")
	plain, marked := printertest.Copies(h.p["k"].Tickets(), "TICKET", "POSSIBLE DUPLICATE")
	// The first attempt may have put its text on paper before the link
	// dropped (that is why it was held); the retry adds exactly one copy,
	// marked.
	if marked["H_v1"] != 1 || plain["H_v1"] > 1 {
		t.Errorf("H_v1 on paper %d times marked and %d plain, want 1 marked and at most the first attempt plain", marked["H_v1"], plain["H_v1"])
	}
	if n := h.count(func(e Event) bool {
		return e.Task != nil && e.Task.TaskNo == "H_v1" && e.Task.State == spool.StateSending
	}); n != 2 {
		t.Errorf("H_v1 sent %d times, want 2 (the unknown attempt and the retry)", n)
	}
	// Printed now: a third retry is a conflict, not a new copy.
	if _, err := h.a.Retry(context.Background(), "H_v1", ""); !errors.Is(err, api.ErrConflict) {
		t.Errorf("retry of a printed task: %v, want ErrConflict", err)
	}
}

// TestRetryHeldOnAnotherPrinter ensures a HELD task retried on another
// printer moves there and prints there, with its banners.
func TestRetryHeldOnAnotherPrinter(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "k", model: printertest.ModelEpson, extra: `on_unknown = "hold"`},
		{name: "b", model: printertest.ModelEpson},
	}, "")
	h.waitPrinter("k", "READY")
	h.p["k"].FaultAfter(printertest.FaultDrop, 40)
	h.submit("H_v1", "k")
	h.waitTask("H_v1", spool.StateHeld)
	r, err := h.a.Retry(context.Background(), "H_v1", "b")
	if err != nil || r.Target != "b" {
		t.Fatalf("retry on b: %+v %v", r, err)
	}
	h.waitTask("H_v1", spool.StatePrinted)
	tk := h.tickets("b", 1)
	text := tk[0].Text()
	if !strings.Contains(text, "POSSIBLE DUPLICATE") || !strings.Contains(text, "TICKET H_v1") {
		t.Errorf("ticket at b:\n%s", text)
	}
}

// TestRetryTimedOutOnAnotherPrinter ensures a task that timed out becomes a
// new version on the printer the manager chose, and prints there only.
func TestRetryTimedOutOnAnotherPrinter(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "a", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}},
		{name: "b", model: printertest.ModelEpson},
	}, "")
	h.waitPrinter("a", "PAPER_OUT")
	h.submit("T_v1", "a", func(nt *spool.NewTask) { nt.Timeout = 10 * time.Second })
	h.clock.Advance(11 * time.Second)
	h.waitTask("T_v1", spool.StateTimedOut)

	if _, err := h.a.Retry(context.Background(), "T_v1", "nowhere"); !errors.Is(err, api.ErrUnknownPrinter) {
		t.Errorf("retry on an unknown printer: %v, want ErrUnknownPrinter", err)
	}
	r, err := h.a.Retry(context.Background(), "T_v1", "b")
	if err != nil {
		t.Fatal(err)
	}
	if r.TaskNo != "T_v2" || r.Printer != "b" || r.ReprintOf != "T_v1" || r.Origin != spool.OriginManager || r.Priority != spool.PriorityUrgent || r.PossibleDuplicate {
		t.Errorf("retry made %+v; want T_v2 on b, reprint_of T_v1, manager, urgent, not a possible duplicate (never sent)", r)
	}
	h.waitTask("T_v2", spool.StatePrinted)
	tk := h.tickets("b", 1)
	if got := printedOrder(tk); fmtStrings(got) != "T_v1" || !strings.Contains(tk[0].Text(), "REPRINT") {
		t.Errorf("b printed %v:\n%s", got, tk[0].Text())
	}
	if n := len(h.p["a"].Tickets()); n != 0 {
		t.Errorf("a printed %d tickets, want none", n)
	}
	// A queued task cannot be retried: it will print anyway.
	h.submit("Q_v1", "a")
	h.waitUntil("Q_v1 queued", func() bool { return h.inState(spool.StateQueued, "Q_v1") })
	if _, err := h.a.Retry(context.Background(), "Q_v1", ""); !errors.Is(err, api.ErrConflict) {
		t.Errorf("retry of a queued task: %v, want ErrConflict", err)
	}
}

// TestRetryTimedOutClickedTwicePrintsOnce ensures a retry of a TIMED_OUT
// task clicked twice (two managers, or a double click) makes one new
// version: the other click is refused with *RetryExists
// naming it, and so is every retry while it waits or once it printed; only
// a version that ended without paper lets a retry make the next one, and
// retrying that failed version while a sibling prints is refused too.
func TestRetryTimedOutClickedTwicePrintsOnce(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "a", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}},
		{name: "b", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}},
	}, "")
	h.waitPrinter("a", "PAPER_OUT")
	h.waitPrinter("b", "PAPER_OUT")
	h.submit("T_v1", "a", func(nt *spool.NewTask) { nt.Timeout = 10 * time.Second })
	h.clock.Advance(11 * time.Second)
	h.waitTask("T_v1", spool.StateTimedOut)

	// Two clicks at once, on the printer still out of paper: the version
	// waits there, live.
	var wg sync.WaitGroup
	results := make([]error, 2)
	tasks := make([]*spool.Task, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tasks[i], results[i] = h.a.Retry(context.Background(), "T_v1", "a")
		}()
	}
	wg.Wait()
	made := ""
	refused := 0
	for i, err := range results {
		var re *api.RetryExists
		switch {
		case err == nil:
			made = tasks[i].TaskNo
		case errors.As(err, &re) && errors.Is(err, api.ErrConflict):
			refused++
			if re.Version != "T_v2" || re.TaskNo != "T_v1" || !strings.Contains(err.Error(), "T_v2") {
				t.Errorf("refusal %v names %+v, want T_v2", err, re)
			}
		default:
			t.Errorf("retry: %v", err)
		}
	}
	if made != "T_v2" || refused != 1 {
		t.Fatalf("two clicks made %q and were refused %d times, want T_v2 and 1: %v", made, refused, results)
	}
	if _, err := h.sp.Get("T_v3"); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("a second version exists: %v", err)
	}
	// T_v2 times out too: a retry may make the next one, and only one.
	h.clock.Advance(91 * time.Second)
	h.waitTask("T_v2", spool.StateTimedOut)
	if err := h.p["b"].SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	h.a.Refresh("b")
	h.waitPrinter("b", "READY")
	r, err := h.a.Retry(context.Background(), "T_v1", "b")
	if err != nil || r.TaskNo != "T_v3" {
		t.Fatalf("retry after the first retry timed out: %+v %v, want T_v3", r, err)
	}
	h.waitTask("T_v3", spool.StatePrinted)
	for _, no := range []string{"T_v1", "T_v2"} {
		var re *api.RetryExists
		if _, err := h.a.Retry(context.Background(), no, "b"); !errors.As(err, &re) || re.Version != "T_v3" || re.State != string(spool.StatePrinted) {
			t.Errorf("retry of %s once T_v3 printed: %v, want RetryExists naming T_v3 PRINTED", no, err)
		}
	}
	h.settle("b")
	if got := printedOrder(h.p["b"].Tickets()); fmtStrings(got) != "T_v1" {
		t.Errorf("b printed %v, want the ticket once", got)
	}
	if n := len(h.p["a"].Tickets()); n != 0 {
		t.Errorf("a printed %d tickets, want none", n)
	}
}

// TestSentBefore ensures a finished task whose bytes may have left is
// retried marked as a possible duplicate, and one never sent is not.
func TestSentBefore(t *testing.T) {
	sent := &spool.Task{Timeline: []spool.TimelineEntry{{State: spool.StateAccepted}, {State: spool.StateQueued}, {State: spool.StateSending}, {State: spool.StateFailed}}}
	never := &spool.Task{Timeline: []spool.TimelineEntry{{State: spool.StateAccepted}, {State: spool.StateParked}, {State: spool.StateTimedOut}}}
	if !sentBefore(sent) || sentBefore(never) {
		t.Errorf("sentBefore: sent %v, never %v", sentBefore(sent), sentBefore(never))
	}
}

// TestPrinterDetailsAndTestPrint ensures a test print comes out with the
// printer's name, and that the printer's details then show its profile,
// what the probe found, its model and the test ticket as the last one.
func TestPrinterDetailsAndTestPrint(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "k", model: printertest.ModelEpson, extra: `profile = "epson-80"` + "\nbackup = \"c\""},
		{name: "c", model: printertest.ModelClone, extra: `profile = "xprinter-80"`},
	}, "")
	h.waitPrinter("k", "READY")
	before := h.a.PrinterDetails()
	if before[0].LastTask != "" {
		t.Errorf("last task %q before any print", before[0].LastTask)
	}
	tp, err := h.a.TestPrint(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tp.TaskNo, "TEST_k_") || tp.Origin != spool.OriginManager {
		t.Errorf("test print task %+v", tp)
	}
	h.waitTask(tp.TaskNo, spool.StatePrinted)
	text := h.tickets("k", 1)[0].Text()
	if !strings.Contains(text, "PRINTGATE TEST") || !strings.Contains(text, "epson-80") || strings.Contains(text, "?????") {
		t.Errorf("test ticket on k:\n%s", text)
	}
	if _, err := h.a.TestPrint(context.Background(), "nowhere"); !errors.Is(err, api.ErrUnknownPrinter) {
		t.Errorf("test print on an unknown printer: %v", err)
	}

	d := h.a.PrinterDetails()
	if len(d) != 2 || d[0].Name != "k" || d[1].Name != "c" {
		t.Fatalf("details %+v, want k then c", d)
	}
	k := d[0]
	if k.Backup != "c" || k.Profile != "epson-80" || k.State != "READY" || k.LastTask != tp.TaskNo || !k.LastAt.Equal(h.clock.Now()) {
		t.Errorf("k: %+v (now %v)", k, h.clock.Now())
	}
	caps := strings.Join(k.Capabilities, "; ")
	for _, want := range []string{"80 mm, 48 columns", "WPC1252", "cutter", "real-time status", "print confirmation"} {
		if !strings.Contains(caps, want) {
			t.Errorf("k capabilities %q lack %q", caps, want)
		}
	}
	if k.Model == "" {
		t.Errorf("k has no model; the Epson emulator answers GS I")
	}

	// A GB18030 printer's test ticket carries a line of Chinese.
	h.waitPrinter("c", "READY")
	tc, err := h.a.TestPrint(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	h.waitTask(tc.TaskNo, spool.StatePrinted)
	if text := h.tickets("c", 1)[0].Text(); !strings.Contains(text, "中文测试") {
		t.Errorf("test ticket on c lacks its Chinese line:\n%s", text)
	}
}

// TestTail ensures the page's tail reads the agent's log ring, and says so
// when there is none.
func TestTail(t *testing.T) {
	ring := logring.New(logring.Options{})
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "", func(o *Options) {
		o.Ring = ring
		o.Logger = slog.New(ring.Handler(slog.LevelInfo))
	})
	h.submit("L_v1", "k")
	h.waitTask("L_v1", spool.StatePrinted)
	var got []string
	err := h.a.Tail(context.Background(), logring.TailOptions{Lines: 100, Contains: "L_v1"}, func(lines []string) error {
		got = append(got, lines...)
		return nil
	})
	if err != nil || !strings.Contains(strings.Join(got, "\n"), "task accepted") {
		t.Errorf("tail: %v\n%s", err, strings.Join(got, "\n"))
	}

	bare := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	if err := bare.a.Tail(context.Background(), logring.TailOptions{}, func([]string) error { return nil }); err == nil || !strings.Contains(err.Error(), "no log ring") {
		t.Errorf("tail without a ring: %v", err)
	}
}

// TestPreview ensures a document previews with the banners its printer
// path prints and its text escaped, and a raw payload as a bounded dump.
func TestPreview(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson, extra: `profile = "epson-58"`}, {name: "b", model: printertest.ModelEpson},
		{name: "x", model: printertest.ModelClone, extra: `profile = "xprinter-80"`}}, "")
	doc := &spool.Task{TaskNo: "P_v1", Printer: "k", Target: "b", PossibleDuplicate: true,
		Document: []byte(`{"lines":[{"text":"<b>FRIED RICE</b> & tea"}]}`)}
	out, err := h.a.Preview(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	// Drawn for b (epson-80, 48 columns) where it prints, not for k
	// (epson-58, 32 columns).
	for _, want := range []string{`class="paper paper-48"`, "POSSIBLE DUPLICATE", "FAILOVER", "&lt;b&gt;FRIED RICE&lt;/b&gt; &amp; tea"} {
		if !strings.Contains(s, want) {
			t.Errorf("preview lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<b>") {
		t.Errorf("preview lets the ticket's text through as HTML:\n%s", s)
	}
	raw := &spool.Task{TaskNo: "R_v1", Printer: "k", ReprintOf: "R", Payload: []byte("<x> KITCHEN\n\x1dV\x00")}
	out, err = h.a.Preview(raw)
	if err != nil {
		t.Fatal(err)
	}
	s = string(out)
	for _, want := range []string{"raw ESC/POS payload, 15 bytes", "REPRINT", "&lt;x&gt; KITCHEN", `class="cut"`} {
		if !strings.Contains(s, want) {
			t.Errorf("raw preview lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<x>") {
		t.Errorf("raw preview lets the payload through as HTML:\n%s", s)
	}
	// A raw job cut short previews as it prints: between INCOMPLETE JOB
	// and the end line.
	out, err = h.a.Preview(&spool.Task{TaskNo: "RAW_k_1", Printer: "k", Origin: spool.OriginRaw, Truncated: true, Payload: []byte("\x1b@HALF A TICK\n")})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INCOMPLETE JOB", "HALF A TICK", "END OF INCOMPLETE JOB", `class="cut"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("truncated raw preview lacks %q:\n%s", want, out)
		}
	}
	// A raw payload previews with its printer's ESC t numbering: ESC t 7
	// 0x80 is the euro sign on an Xprinter, Ç (PC437) on an Epson.
	euro := []byte("\x1c.\x1bt\x07\x803.80\n") // FS . leaves the Xprinter's Chinese mode
	for _, c := range []struct{ printer, want string }{{"x", "€3.80"}, {"k", "Ç3.80"}} {
		out, err := h.a.Preview(&spool.Task{TaskNo: "E_" + c.printer, Printer: c.printer, Payload: euro})
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("raw preview on %s: %v, want %q in\n%s", c.printer, err, c.want, out)
		}
	}
	if _, err := h.a.Preview(&spool.Task{TaskNo: "G_v1", Printer: "gone"}); !errors.Is(err, api.ErrUnknownPrinter) {
		t.Errorf("preview for an unconfigured printer: %v", err)
	}
}
