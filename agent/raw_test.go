package agent

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/agent/rawport"
	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// freeAddr returns a loopback address no one listens on now, for a raw
// port (the config wants a real port number).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// rawHarness is a harness whose printer "kitchen" has a raw port, opened as
// the service opens it once the agent is ready. extra adds TOML keys to
// kitchen's table.
func rawHarness(t *testing.T, extra string, specs ...printerSpec) (*harness, string) {
	t.Helper()
	return rawHarnessWith(t, spool.Options{}, extra, specs...)
}

// rawHarnessWith is rawHarness over a spool opened with so.
func rawHarnessWith(t *testing.T, so spool.Options, extra string, specs ...printerSpec) (*harness, string) {
	t.Helper()
	addr := freeAddr(t)
	k := printerSpec{name: "kitchen", model: printertest.ModelEpson, extra: fmt.Sprintf("raw_listen = %q\n%s", addr, extra)}
	if len(specs) > 0 && specs[0].name == "kitchen" {
		k.faults, k.extra = specs[0].faults, k.extra+"\n"+specs[0].extra
		specs = specs[1:]
	}
	clock := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), so, clock, append([]printerSpec{k}, specs...), "")
	if err := h.a.OpenRawPorts(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.a.CloseRawPorts)
	got, ok := h.a.RawPortAddr("kitchen")
	if !ok || got != addr {
		t.Fatalf("raw port of kitchen: %q %v, want %s", got, ok, addr)
	}
	return h, addr
}

// sendRaw writes one job as nc or the Windows RAW port does: connect,
// write, close the sending side, and wait for the port to close, which it
// does once the job is on disk.
func sendRaw(t *testing.T, addr string, job []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := c.Write(job); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the port did not end the job cleanly: %v", err)
	}
}

// rawTicket is a job as a POS writes it: reset, a line, a cut.
func rawTicket(text string) []byte {
	return []byte("\x1b@" + text + "\n\x1dV\x00")
}

// rawTasks lists the raw tasks in the spool, oldest first.
func rawTasks(t *testing.T, h *harness) []*spool.Task {
	t.Helper()
	pg, err := h.sp.List(spool.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []*spool.Task
	for _, pt := range pg.Tasks {
		if pt.Origin == spool.OriginRaw {
			full, err := h.sp.Get(pt.TaskNo)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, full)
		}
	}
	slices.SortFunc(out, func(a, b *spool.Task) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

var rawTaskNo = regexp.MustCompile(`^RAW_kitchen_\d{8}-\d{6}_\d+-[0-9a-f]{8}$`)

// TestRawOneShot is the nc / CUPS socket / Windows RAW port case: one
// connection, one job, a task of origin raw that prints once.
func TestRawOneShot(t *testing.T) {
	h, addr := rawHarness(t, "")
	sendRaw(t, addr, rawTicket("RAW ONE"))
	// The connection closed only after the task was on disk.
	ts := rawTasks(t, h)
	if len(ts) != 1 {
		t.Fatalf("%d raw tasks after one job, want 1", len(ts))
	}
	task := ts[0]
	if !rawTaskNo.MatchString(task.TaskNo) || task.Printer != "kitchen" || task.Truncated || task.PossibleDuplicate {
		t.Errorf("raw task %+v", task)
	}
	if string(task.Payload) != string(rawTicket("RAW ONE")) {
		t.Errorf("payload %q", task.Payload)
	}
	h.waitTask(task.TaskNo, spool.StatePrinted)
	// The cloud hears of it like any local task: the first event carries
	// the job summary with origin raw.
	evs, err := h.sp.ReadOutbox(100)
	if err != nil {
		t.Fatal(err)
	}
	var first *spool.Event
	for i := range evs {
		if evs[i].TaskNo == task.TaskNo && evs[i].N == 1 {
			first = &evs[i].Event
		}
	}
	if first == nil || first.Origin != spool.OriginRaw || first.Job == nil || first.Job.Origin != spool.OriginRaw || first.Job.Size != len(task.Payload) {
		t.Errorf("the cloud's first event of %s: %+v", task.TaskNo, first)
	}
	for _, p := range h.a.Printers() { // GET /api/v1/printers
		if p.Name == "kitchen" && p.RawPort != addr {
			t.Errorf("API shows kitchen's raw port %q, want %s", p.RawPort, addr)
		}
	}
	for _, d := range h.a.PrinterDetails() {
		if d.Name == "kitchen" && (d.RawPort != addr || d.RawJobs != 1 || d.RawRefused != 0) {
			t.Errorf("page shows kitchen's raw port %q with %d jobs, %d refused; want %s, 1, 0", d.RawPort, d.RawJobs, d.RawRefused, addr)
		}
	}
	tk := h.tickets("kitchen", 1)[0]
	if !strings.Contains(tk.Text(), "RAW ONE") || strings.Contains(tk.Text(), "INCOMPLETE") || strings.Contains(tk.Text(), "DUPLICATE") {
		t.Errorf("printed:\n%s", tk.Text())
	}
}

// TestRawKeepAlive is a POS that keeps one connection open across jobs:
// each job ends at the quiet after its cut (no close), becomes its own
// task, and prints once, in order. (rawport's own tests cover jobs that
// only the idle gap ends.)
func TestRawKeepAlive(t *testing.T) {
	h, addr := rawHarness(t, `raw_idle_gap = "150ms"`)
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 1; i <= 3; i++ {
		if _, err := c.Write(rawTicket(fmt.Sprintf("KEEP %d", i))); err != nil {
			t.Fatal(err)
		}
		h.waitUntil(fmt.Sprintf("raw job %d taken", i), func() bool { return len(rawTasks(t, h)) == i })
	}
	ts := rawTasks(t, h)
	for i, task := range ts {
		h.waitTask(task.TaskNo, spool.StatePrinted)
		if want := fmt.Sprintf("KEEP %d", i+1); !strings.Contains(string(task.Payload), want) {
			t.Errorf("task %d (%s) payload %q, want %q", i+1, task.TaskNo, task.Payload, want)
		}
	}
	var printed []string
	for _, tk := range h.p["kitchen"].Tickets() {
		printed = append(printed, tk.Text())
	}
	all := strings.Join(printed, "\n")
	for i := 1; i <= 3; i++ {
		if n := strings.Count(all, fmt.Sprintf("KEEP %d", i)); n != 1 {
			t.Errorf("KEEP %d printed %d times:\n%s", i, n, all)
		}
	}
	if a, b, c := strings.Index(all, "KEEP 1"), strings.Index(all, "KEEP 2"), strings.Index(all, "KEEP 3"); !(a < b && b < c) {
		t.Errorf("printed out of order:\n%s", all)
	}
}

// TestRawRetryMarkedDuplicate: a byte-identical job within the window is a
// POS retry; it prints, marked POSSIBLE DUPLICATE, never silently twice
// and never dropped. After the window the same bytes are a new ticket.
func TestRawRetryMarkedDuplicate(t *testing.T) {
	h, addr := rawHarness(t, `raw_duplicate_window = "10s"`)
	job := rawTicket("TABLE 7 NOODLES")
	sendRaw(t, addr, job)
	sendRaw(t, addr, job)
	h.clock.Advance(11 * time.Second)
	sendRaw(t, addr, job)
	ts := rawTasks(t, h)
	if len(ts) != 3 {
		t.Fatalf("%d raw tasks, want 3", len(ts))
	}
	if ts[0].PossibleDuplicate || !ts[1].PossibleDuplicate || ts[2].PossibleDuplicate {
		t.Errorf("possible_duplicate = %v %v %v, want false true false", ts[0].PossibleDuplicate, ts[1].PossibleDuplicate, ts[2].PossibleDuplicate)
	}
	for _, task := range ts {
		h.waitTask(task.TaskNo, spool.StatePrinted)
	}
	tks := h.tickets("kitchen", 3)
	for i, tk := range tks {
		marked := strings.Contains(tk.Text(), "POSSIBLE DUPLICATE")
		if marked != (i == 1) || !strings.Contains(tk.Text(), "TABLE 7 NOODLES") {
			t.Errorf("ticket %d (marked %v):\n%s", i+1, marked, tk.Text())
		}
	}
}

// TestRawTruncatedPrintsMarked: a POS connection reset mid-job leaves a
// task flagged truncated (TRUNCATED in its timeline) that prints between
// an INCOMPLETE JOB banner and an end line with a cut, so the half ticket
// is never taken for a whole one.
func TestRawTruncatedPrintsMarked(t *testing.T) {
	h, addr := rawHarness(t, "")
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	// The port answers DLE EOT as it reads it, after what came before it
	// on the stream: once the answer is back, the lines are in.
	if _, err := c.Write([]byte("\x1b@TABLE 9\nFRIED RICE x2\n\x10\x04\x01")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(waitLimit))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	// Then a command cut off by the reset.
	if _, err := c.Write([]byte("\x1b!")); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	h.waitUntil("the truncated job is taken", func() bool { return len(rawTasks(t, h)) == 1 })
	task := rawTasks(t, h)[0]
	if !task.Truncated || len(task.Timeline) == 0 || task.Timeline[0].Reason != spool.ReasonTruncated {
		t.Errorf("task %s truncated=%v timeline %+v", task.TaskNo, task.Truncated, task.Timeline)
	}
	if strings.Contains(string(task.Payload), "\x1b!") || strings.Contains(string(task.Payload), "\x10\x04") {
		t.Errorf("payload keeps a cut-off command or the status query: %q", task.Payload)
	}
	h.waitTask(task.TaskNo, spool.StatePrinted)
	tk := h.tickets("kitchen", 1)[0]
	text := tk.Text()
	for _, want := range []string{"INCOMPLETE JOB", "FRIED RICE x2", "END OF INCOMPLETE JOB"} {
		if !strings.Contains(text, want) {
			t.Errorf("printed ticket lacks %q:\n%s", want, text)
		}
	}
	if tk.Cut == "" {
		t.Errorf("the incomplete ticket was not cut off from the next one")
	}
}

// TestRawPrinterOff: with the printer off the POS's write still succeeds;
// the job waits PARKED and prints when the printer returns.
func TestRawPrinterOff(t *testing.T) {
	h, addr := rawHarness(t, "", printerSpec{name: "kitchen", faults: []printertest.FaultKind{printertest.FaultOffline}})
	h.waitPrinter("kitchen", "OFFLINE")
	sendRaw(t, addr, rawTicket("WHILE OFF"))
	task := rawTasks(t, h)[0]
	h.waitTask(task.TaskNo, spool.StateParked)
	h.p["kitchen"].SetFault(printertest.FaultOffline, false)
	h.a.Refresh("kitchen")
	h.waitTask(task.TaskNo, spool.StatePrinted)
	if tk := h.tickets("kitchen", 1)[0]; !strings.Contains(tk.Text(), "WHILE OFF") {
		t.Errorf("printed:\n%s", tk.Text())
	}
}

// TestRawFailover: a raw job for a printer that stays down prints at its
// backup with the FAILOVER banner.
func TestRawFailover(t *testing.T) {
	h, addr := rawHarness(t, `backup = "bar"`,
		printerSpec{name: "kitchen", faults: []printertest.FaultKind{printertest.FaultOffline}},
		printerSpec{name: "bar", model: printertest.ModelEpson})
	h.waitPrinter("kitchen", "OFFLINE")
	sendRaw(t, addr, rawTicket("TO THE BACKUP"))
	task := rawTasks(t, h)[0]
	h.waitTask(task.TaskNo, spool.StateParked)
	h.clock.Advance(16 * time.Second)
	h.a.Refresh("kitchen")
	done := h.waitTask(task.TaskNo, spool.StatePrinted)
	if done.Target != "bar" {
		t.Errorf("printed on %q, want the backup bar", done.Target)
	}
	tk := h.tickets("bar", 1)[0]
	if !strings.Contains(tk.Text(), "FAILOVER kitchen") || !strings.Contains(tk.Text(), "TO THE BACKUP") {
		t.Errorf("backup printed:\n%s", tk.Text())
	}
}

// TestRawWaitsWhenFull: once the spool could not take another job of the
// largest size, the port reads no new job: a POS's connection is neither
// reset nor ended (a write-and-close POS would never hear a reset: its
// ticket waits, unread, for room), nothing is stored, and /healthz says
// why.
func TestRawWaitsWhenFull(t *testing.T) {
	h, addr := rawHarnessWith(t, spool.Options{MaxSize: 2 << 20, Reserve: 512 << 10, MaxTaskBytes: 64 << 10}, "",
		printerSpec{name: "kitchen", faults: []printertest.FaultKind{printertest.FaultOffline}})
	sendRaw(t, addr, rawTicket("FITS"))
	// Fill past cap - MaxTaskBytes with tasks that wait (printer off).
	payload := []byte(strings.Repeat("\x1b@", 12<<10))
	sink := rawSink{h.a}
	// Until the spool has no room even once the lane has written the
	// moves of every task it holds: those rewrite records and free pages
	// the file decision may give a job (on a loaded machine the lane was
	// still behind when the loop first stopped, and the job got in).
	for i := 0; ; {
		for ; sink.Ready("kitchen") == nil; i++ {
			if i > 200 {
				t.Fatal("the spool never reached its cap")
			}
			h.submit(fmt.Sprintf("FILL%03d_v1", i), "kitchen", func(nt *spool.NewTask) { nt.Document, nt.Payload = nil, payload })
		}
		h.settle("kitchen")
		if sink.Ready("kitchen") != nil {
			break
		}
	}
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write(rawTicket("WAITS"))
	c.(*net.TCPConn).CloseWrite()
	if _, err = io.ReadAll(c); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the connection the spool has no room for ended with %v, want it left waiting", err)
	}
	if hl := h.a.Health(); hl.Status != "degraded" || !strings.Contains(hl.Error, "raw port of printer kitchen") {
		t.Errorf("health %+v, want degraded naming kitchen's raw port", hl)
	}
	if ts := rawTasks(t, h); len(ts) != 1 {
		t.Errorf("%d raw tasks, want only the one that fit", len(ts))
	}
}

// TestRawPortsFollowReload: a reload opens the raw port of a printer that
// gains one, keeps an unchanged port open (a connection on it survives, even
// when the printer's other settings change), moves a port whose address
// changed, and closes the port of a printer that loses it.
func TestRawPortsFollowReload(t *testing.T) {
	h, addr := rawHarness(t, "", printerSpec{name: "bar", model: printertest.ModelEpson})
	barAddr := freeAddr(t)
	kept, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()

	// kitchen changes its timeout (lane replaced) but not its raw port;
	// bar gains one.
	h.writeConfig("",
		printerBlock("kitchen", h.p["kitchen"], fmt.Sprintf("raw_listen = %q\ntimeout = \"2m\"", addr)),
		printerBlock("bar", h.p["bar"], fmt.Sprintf("raw_listen = %q", barAddr)))
	res := h.reload()
	if len(res.Notes) != 0 {
		t.Errorf("reload notes %v", res.Notes)
	}
	if got, ok := h.a.RawPortAddr("bar"); !ok || got != barAddr {
		t.Errorf("bar's raw port after reload: %q %v, want %s", got, ok, barAddr)
	}
	// The connection opened before the reload still delivers a job.
	kept.SetDeadline(time.Now().Add(waitLimit))
	if _, err := kept.Write(rawTicket("ACROSS RELOAD")); err != nil {
		t.Fatal(err)
	}
	kept.(*net.TCPConn).CloseWrite()
	if _, err := io.Copy(io.Discard, kept); err != nil {
		t.Fatalf("a job on a raw port the reload did not change: %v", err)
	}
	sendRaw(t, barAddr, rawTicket("BAR RAW"))
	h.waitUntil("both raw jobs taken", func() bool { return len(rawTasks(t, h)) == 2 })

	// kitchen's port moves; bar's goes away.
	moved := freeAddr(t)
	h.writeConfig("",
		printerBlock("kitchen", h.p["kitchen"], fmt.Sprintf("raw_listen = %q", moved)),
		printerBlock("bar", h.p["bar"], ""))
	h.reload()
	for _, gone := range []string{addr, barAddr} {
		if c, err := net.DialTimeout("tcp", gone, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still takes connections after the reload closed it", gone)
		}
	}
	if _, ok := h.a.RawPortAddr("bar"); ok {
		t.Error("bar still has a raw port")
	}
	sendRaw(t, moved, rawTicket("MOVED"))
	ts := rawTasks(t, h)
	if len(ts) != 3 || ts[0].Printer != "kitchen" || ts[1].Printer != "bar" || ts[2].Printer != "kitchen" {
		t.Fatalf("raw tasks %d", len(ts))
	}
	for _, task := range ts {
		h.waitTask(task.TaskNo, spool.StatePrinted)
	}
}

// TestRawTooLargeRefused: a stream over the task size limit is cut off and
// refused: the POS's connection is reset, nothing is stored, and the page
// hears of it (one raw_refused change, which raises an alert).
func TestRawTooLargeRefused(t *testing.T) {
	h, addr := rawHarnessWith(t, spool.Options{MaxTaskBytes: 4096}, "")
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	// The write may already fail once the port resets; the read must.
	c.Write([]byte("\x1b@" + strings.Repeat("LONG LINE OF A HUGE TICKET\n", 400)))
	if _, err := io.ReadAll(c); err == nil {
		t.Error("the POS saw an orderly close for a job that was refused")
	}
	// The page hears of it through the event (agent/daemon's changeOf).
	if ch := h.waitFor("a raw_refused event for the page", func(e Event) bool { return e.RawRefused != "" }); ch.Printer != "kitchen" || !strings.Contains(ch.RawRefused, "4096 byte job limit") {
		t.Errorf("refusal event %+v", ch)
	}
	if ts := rawTasks(t, h); len(ts) != 0 {
		t.Errorf("%d raw tasks stored from a refused job", len(ts))
	}
}

// TestRawPortAddedByReload: an agent started with no raw port opens one
// when a reload gives a printer raw_listen.
func TestRawPortAddedByReload(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "kitchen", model: printertest.ModelEpson}}, "")
	if err := h.a.OpenRawPorts(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.a.CloseRawPorts)
	addr := freeAddr(t)
	h.writeConfig("", printerBlock("kitchen", h.p["kitchen"], fmt.Sprintf("raw_listen = %q", addr)))
	h.reload()
	if got, ok := h.a.RawPortAddr("kitchen"); !ok || got != addr {
		t.Fatalf("raw port after a reload added it: %q %v, want %s", got, ok, addr)
	}
	sendRaw(t, addr, rawTicket("ADDED BY RELOAD"))
	h.waitTask(rawTasks(t, h)[0].TaskNo, spool.StatePrinted)
}

// TestRawResendAfterRestartMarked: the agent stored a job, then died before
// closing its connection (here: stopped and started again over the same
// spool); the POS, which saw a reset, resends the same bytes seconds
// later. The resend prints marked POSSIBLE DUPLICATE, not twice unmarked.
func TestRawResendAfterRestartMarked(t *testing.T) {
	h, addr := rawHarness(t, `raw_duplicate_window = "10s"`)
	job := rawTicket("TABLE 3 DUMPLINGS")
	sendRaw(t, addr, job)
	first := rawTasks(t, h)[0]
	h.waitTask(first.TaskNo, spool.StatePrinted)
	h.a.CloseRawPorts()
	h.stop()
	h.clock.Advance(2 * time.Second)
	h.start()
	if err := h.a.OpenRawPorts(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.a.CloseRawPorts)
	sendRaw(t, addr, job)
	ts := rawTasks(t, h)
	if len(ts) != 2 || ts[0].PossibleDuplicate || !ts[1].PossibleDuplicate {
		t.Fatalf("raw tasks %d, possible_duplicate of the resend %v: want it marked", len(ts), len(ts) == 2 && ts[1].PossibleDuplicate)
	}
	h.waitTask(ts[1].TaskNo, spool.StatePrinted)
	if tk := h.tickets("kitchen", 2)[1]; !strings.Contains(tk.Text(), "POSSIBLE DUPLICATE") {
		t.Errorf("the resend printed unmarked:\n%s", tk.Text())
	}
}

// TestRawLunchRush: 20 POS terminals print to one kitchen printer at the
// same moment, each as many npm clients do: connect, write the ticket,
// close, without waiting for the port. All 20 are tasks, each prints once,
// and they come out in the order the connections arrived.
func TestRawLunchRush(t *testing.T) {
	h, addr := rawHarness(t, "")
	const n = 20
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	start := make(chan struct{})
	errs := make(chan error, n)
	for i, c := range conns {
		go func() {
			<-start
			_, err := c.Write(rawTicket(fmt.Sprintf("RUSH %02d", i)))
			c.Close()
			errs <- err
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	h.waitUntil("20 raw tasks", func() bool { return len(rawTasks(t, h)) >= n })
	ts := rawTasks(t, h)
	if len(ts) != n {
		t.Fatalf("%d raw tasks, want %d", len(ts), n)
	}
	for i, task := range ts {
		if want := fmt.Sprintf("RUSH %02d", i); !strings.Contains(string(task.Payload), want) || task.PossibleDuplicate || task.Truncated {
			t.Errorf("task %d (%s) payload %q duplicate %v truncated %v, want %q", i+1, task.TaskNo, task.Payload, task.PossibleDuplicate, task.Truncated, want)
		}
		h.waitTask(task.TaskNo, spool.StatePrinted)
	}
	tks := h.tickets("kitchen", n)
	if len(tks) != n {
		t.Fatalf("%d tickets, want %d", len(tks), n)
	}
	for i, tk := range tks {
		if want := fmt.Sprintf("RUSH %02d", i); !strings.Contains(tk.Text(), want) || strings.Contains(tk.Text(), "DUPLICATE") {
			t.Errorf("ticket %d:\n%s\nwant %s, unmarked", i+1, tk.Text(), want)
		}
	}
	for _, d := range h.a.PrinterDetails() {
		if d.Name == "kitchen" && (d.RawJobs != n || d.RawRefused != 0) {
			t.Errorf("page shows %d raw jobs, %d refused; want %d, 0", d.RawJobs, d.RawRefused, n)
		}
	}
}

// TestRawStatusPollsMakeNoTask: node-thermal-printer's getStatus() with a
// character set sends ESC t 0 then GS r 1 on a connection of its own. Two
// polls are answered and make no task; the real receipt after them prints
// once, not flagged POSSIBLE DUPLICATE.
func TestRawStatusPollsMakeNoTask(t *testing.T) {
	h, addr := rawHarness(t, "")
	for range 2 {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(waitLimit))
		if _, err := c.Write([]byte{0x1b, 0x74, 0x00, 0x1d, 0x72, 0x01}); err != nil {
			t.Fatal(err)
		}
		a := make([]byte, 1)
		if _, err := io.ReadFull(c, a); err != nil || a[0] != 0x00 {
			t.Fatalf("GS r 1 answer % x, %v; want 00 (paper adequate)", a, err)
		}
		c.Close()
	}
	sendRaw(t, addr, rawTicket("TABLE 4 RAMEN"))
	ts := rawTasks(t, h)
	if len(ts) != 1 || !strings.Contains(string(ts[0].Payload), "TABLE 4 RAMEN") || ts[0].PossibleDuplicate {
		for _, task := range ts {
			t.Logf("task %s payload % x duplicate %v", task.TaskNo, task.Payload, task.PossibleDuplicate)
		}
		t.Fatalf("%d raw tasks after two status polls and a receipt, want the receipt alone, unflagged", len(ts))
	}
	h.waitTask(ts[0].TaskNo, spool.StatePrinted)
	tk := h.tickets("kitchen", 1)[0]
	if !strings.Contains(tk.Text(), "TABLE 4 RAMEN") || strings.Contains(tk.Text(), "DUPLICATE") {
		t.Errorf("printed:\n%s", tk.Text())
	}
}

// TestRawStatusSetting: by default (raw_status = "spooled") the raw port
// answers a ready printer while the printer is out of paper, since the job
// is spooled; with raw_status = "printer" it answers the printer's state.
func TestRawStatusSetting(t *testing.T) {
	for _, tc := range []struct {
		extra          string
		eot4, gsr1     byte
		acceptsJobsToo bool
	}{
		{"", 0x12, 0x00, true},
		{`raw_status = "spooled"`, 0x12, 0x00, true},
		{`raw_status = "printer"`, 0x72, 0x0C, true},
	} {
		t.Run(tc.extra, func(t *testing.T) {
			h, addr := rawHarness(t, tc.extra, printerSpec{name: "kitchen", faults: []printertest.FaultKind{printertest.FaultPaperOut}})
			h.waitPrinter("kitchen", "PAPER_OUT")
			c, err := net.DialTimeout("tcp", addr, waitLimit)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(waitLimit))
			if _, err := c.Write([]byte{0x10, 0x04, 0x04, 0x1d, 0x72, 0x01}); err != nil {
				t.Fatal(err)
			}
			a := make([]byte, 2)
			if _, err := io.ReadFull(c, a); err != nil {
				t.Fatal(err)
			}
			if a[0] != tc.eot4 || a[1] != tc.gsr1 {
				t.Fatalf("DLE EOT 4, GS r 1 answered % x, want %02x %02x", a, tc.eot4, tc.gsr1)
			}
			// Either way the port spools the job.
			if _, err := c.Write(rawTicket("WHILE OUT OF PAPER")); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Fatalf("the port did not end the job cleanly: %v", err)
			}
			if ts := rawTasks(t, h); len(ts) != 1 {
				t.Fatalf("%d raw tasks, want 1", len(ts))
			}
		})
	}
}

// TestRawKeptOpenJobAcrossStop: a POS that keeps its connection open has
// sent a ticket ending in a cut then a drawer kick (ESC p) when the agent
// stops (the raw ports close, as at a service stop or a reload that closes
// the port): the job is a task and prints, unmarked; the connection is
// reset, not ended in order: after a FIN the POS's next ticket would be
// written without an error and lost.
func TestRawKeptOpenJobAcrossStop(t *testing.T) {
	for _, how := range []string{"stop", "reload"} {
		t.Run(how, func(t *testing.T) {
			h, addr := rawHarness(t, `raw_idle_gap = "1m"`)
			c, err := net.DialTimeout("tcp", addr, waitLimit)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(waitLimit))
			job := append(rawTicket("CUT THEN DRAWER"), 0x1b, 'p', 0, 25, 250)
			// DLE EOT 4 after it: once answered, the port has read the job.
			if _, err := c.Write(append(job, 0x10, 0x04, 0x04)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "stop":
				h.a.CloseRawPorts()
			case "reload": // raw settings change: the port is reopened
				h.writeConfig("", printerBlock("kitchen", h.p["kitchen"], fmt.Sprintf("raw_listen = %q\nraw_idle_gap = \"30s\"", addr)))
				h.reload()
			}
			if _, err := io.Copy(io.Discard, c); !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("the kept-open connection ended with %v, want a reset", err)
			}
			ts := rawTasks(t, h)
			if len(ts) != 1 || string(ts[0].Payload) != string(job) || ts[0].Truncated {
				t.Fatalf("%d raw tasks (%+v), want the job, whole", len(ts), ts)
			}
			h.waitTask(ts[0].TaskNo, spool.StatePrinted)
			tk := h.tickets("kitchen", 1)[0]
			if !strings.Contains(tk.Text(), "CUT THEN DRAWER") || strings.Contains(tk.Text(), "INCOMPLETE") {
				t.Errorf("printed:\n%s", tk.Text())
			}
		})
	}
}

// TestRawCutInsideCommandAtStopRefused: a job that ends inside a command
// when the port closes cannot print; it is dropped, but reported: the page
// hears of the refusal, and the POS sees a reset.
func TestRawCutInsideCommandAtStopRefused(t *testing.T) {
	h, addr := rawHarness(t, `raw_idle_gap = "1m"`)
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	// A QR code that declares 256 more bytes than it sends, then DLE EOT 4
	// (answered in real time even inside a command).
	if _, err := c.Write([]byte("\x1b@ORDER 9\n\x1d(k\x03\x01\x31\x50\x30\x10\x04\x04")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	h.a.CloseRawPorts()
	if _, err := io.ReadAll(c); err == nil {
		t.Error("the POS saw an orderly close for a job that was dropped")
	}
	// The page hears of it through the agent's events (agent/daemon's hub
	// turns a RawRefused event into a raw_refused change).
	e := h.waitFor("a raw refusal event for the page", func(e Event) bool { return e.RawRefused != "" })
	if e.Printer != "kitchen" || !strings.Contains(e.RawRefused, "port closed") {
		t.Errorf("refusal event %+v", e)
	}
	if ts := rawTasks(t, h); len(ts) != 0 {
		t.Errorf("%d raw tasks stored from a job cut inside a command", len(ts))
	}
}

// TestRawReloadKeepsBacklog: a reload that changes a raw port's settings
// but not its address hands the listener to the new port, so a
// write-and-close POS whose connection waited in the listen backlog during
// the reload (here behind connections filling the port's slots) is served
// by the new port. Closing the listener reset it instead, and its ticket,
// which the POS had written and closed without an error, was lost.
func TestRawReloadKeepsBacklog(t *testing.T) {
	const perAddr = "raw_max_per_address = 100"
	h, addr := rawHarness(t, perAddr)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range rawport.DefaultMaxConns {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	h.waitUntil("the port's slots all taken", func() bool {
		h.a.raw.mu.Lock()
		p := h.a.raw.ports["kitchen"].port
		h.a.raw.mu.Unlock()
		return p.Stats().Conns == rawport.DefaultMaxConns
	})
	pos, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pos.Write(rawTicket("IN THE BACKLOG")); err != nil {
		t.Fatal(err)
	}
	if err := pos.Close(); err != nil {
		t.Fatal(err)
	}
	h.writeConfig("", printerBlock("kitchen", h.p["kitchen"], fmt.Sprintf("raw_listen = %q\n%s\nraw_idle_gap = \"3s\"", addr, perAddr)))
	if res := h.reload(); len(res.Notes) != 0 {
		t.Fatalf("reload notes %v", res.Notes)
	}
	h.waitUntil("the job that waited in the backlog taken", func() bool { return len(rawTasks(t, h)) == 1 })
	if got := string(rawTasks(t, h)[0].Payload); !strings.Contains(got, "IN THE BACKLOG") {
		t.Fatalf("raw task %q", got)
	}
}

// TestRawReloadKeepsWaitingConns: a reload that changes a raw port's
// settings hands the new port the connections the old one had accepted
// but held unread, here behind their address's connections being read
// (rawport.DefaultMaxReadPerAddress, each in the middle of a job). The old
// port reset them when it closed, and a write-and-close POS's ticket (a
// burst from one POS, or several POS behind one NAT) was lost without a
// word.
func TestRawReloadKeepsWaitingConns(t *testing.T) {
	h, addr := rawHarness(t, "")
	var busy []net.Conn
	defer func() {
		for _, c := range busy {
			c.Close()
		}
	}()
	for i := range rawport.DefaultMaxReadPerAddress {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		busy = append(busy, c)
		if _, err := fmt.Fprintf(c, "\x1b@BUSY %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	port := func() *rawport.Port {
		h.a.raw.mu.Lock()
		defer h.a.raw.mu.Unlock()
		return h.a.raw.ports["kitchen"].port
	}
	h.waitUntil("the address's connections all being read", func() bool {
		return port().Stats().Conns == rawport.DefaultMaxReadPerAddress
	})
	const n = 3
	for i := range n {
		pos, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pos.Write(rawTicket(fmt.Sprintf("WAITING %d", i))); err != nil {
			t.Fatal(err)
		}
		if err := pos.Close(); err != nil {
			t.Fatal(err)
		}
	}
	h.waitUntil("the tickets held unread behind them", func() bool {
		return port().Stats().Conns == rawport.DefaultMaxReadPerAddress+n
	})
	h.writeConfig("", printerBlock("kitchen", h.p["kitchen"], fmt.Sprintf("raw_listen = %q\nraw_idle_gap = \"3s\"", addr)))
	if res := h.reload(); len(res.Notes) != 0 {
		t.Fatalf("reload notes %v", res.Notes)
	}
	stored := func() []string {
		var got []string
		for _, task := range rawTasks(t, h) {
			if s := string(task.Payload); strings.Contains(s, "WAITING") {
				got = append(got, s)
			}
		}
		return got
	}
	h.waitUntil("every ticket held at the reload taken", func() bool { return len(stored()) == n })
	for i := range n {
		if !slices.ContainsFunc(stored(), func(s string) bool { return strings.Contains(s, fmt.Sprintf("WAITING %d", i)) }) {
			t.Errorf("ticket WAITING %d not stored; stored %q", i, stored())
		}
	}
}

// TestRawStopReadsWaitingConns: at a stop the raw port's drain also reads
// the connections it had accepted and held unread behind their address's
// connections being read, so a write-and-close POS's ticket there is
// stored. The port reset them when the drain began, and those tickets,
// which their POS had written and closed without an error, were lost.
func TestRawStopReadsWaitingConns(t *testing.T) {
	h, addr := rawHarness(t, "")
	var busy []net.Conn
	defer func() {
		for _, c := range busy {
			c.Close()
		}
	}()
	for i := range rawport.DefaultMaxReadPerAddress {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		busy = append(busy, c)
		if _, err := fmt.Fprintf(c, "\x1b@BUSY %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	h.a.raw.mu.Lock()
	port := h.a.raw.ports["kitchen"].port
	h.a.raw.mu.Unlock()
	h.waitUntil("the address's connections all being read", func() bool {
		return port.Stats().Conns == rawport.DefaultMaxReadPerAddress
	})
	const n = 3
	for i := range n {
		pos, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pos.Write(rawTicket(fmt.Sprintf("WAITING %d", i))); err != nil {
			t.Fatal(err)
		}
		if err := pos.Close(); err != nil {
			t.Fatal(err)
		}
	}
	h.waitUntil("the tickets held unread behind them", func() bool {
		return port.Stats().Conns == rawport.DefaultMaxReadPerAddress+n
	})
	h.a.CloseRawPorts()
	var got []string
	for _, task := range rawTasks(t, h) {
		if s := string(task.Payload); strings.Contains(s, "WAITING") {
			got = append(got, s)
		}
	}
	for i := range n {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, fmt.Sprintf("WAITING %d", i)) }) {
			t.Errorf("ticket WAITING %d not stored at the stop; stored %q", i, got)
		}
	}
}
