package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"printgate/agent/config"
	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// The restart scenario (docs/BENCHMARKS.md "Restart with a 100k backlog"):
// an agent killed with a large backlog
// in its spool starts again over the same printers.
const (
	restartPrinters = 8
	restartTasks    = 100_000
	// restartTimeout is every task's deadline after accept: long enough
	// that nothing expires while the benchmark runs.
	restartTimeout = time.Hour
	// restartLimit bounds each wait of the benchmark on real I/O.
	restartLimit = 5 * time.Minute
)

// BenchmarkRestart measures an agent restarting over a spool that holds
// 100,000 spooled tasks spread over 8 emulated Epson printers on loopback,
// left as a SIGKILL'd agent left them (QUEUED, PARKED and ACCEPTED, a few
// RETRY_WAIT, one SENDING per printer). Each iteration copies the closed
// spool file to a fresh path, opens it and starts a fresh agent on the real
// clock with fresh printers, then reports:
//
//   - open-ms: spool.Open of the copied file (it checks the whole file's
//     structure), before the agent starts;
//   - ready-ms: from just before Run to Ready (the whole backlog restored);
//   - first-ticket-ms: from just before Run to the first ticket cut on any
//     printer;
//   - drain-s and tasks/s: from just before Run until every task is
//     PRINTED (counted from Observe events, then checked against the
//     tickets each printer cut);
//   - printed-at-ready: tickets already printed when Ready closed;
//   - heap-B/task and rss-MB: from a separate restore of the same backlog
//     whose printers hold every job until measured, so that nothing has
//     printed and the emulators hold no tickets: the Go heap in use after
//     a GC at Ready, less the heap before the agent started, divided by the
//     tasks held; and the process's VmRSS then (Linux only);
//   - dirtied-KB/task: /proc/self/io write_bytes from start to drained,
//     per task: the page cache the spool's writes dirtied (Linux only). The
//     kernel counts whole folios, so on a file system with large folios it
//     overstates what reaches the device;
//   - emu-tasks/s and drain-%emu: the emulators' own speed, measured once
//     per run by one goroutine per printer sending the same jobs through
//     escpos.Device (the agent's driver, same completion barrier) without
//     the agent, and the agent's drain rate as a percentage of it.
//
// Building the spool is setup and is not timed. The benchmark takes about a
// minute per iteration; record it with a fixed count:
//
//	go test -run '^$' -bench BenchmarkRestart -benchtime 1x ./agent/
func BenchmarkRestart(b *testing.B) {
	b.StopTimer()
	dir := b.TempDir()
	src := filepath.Join(dir, "backlog.db")
	setup := time.Now()
	states := buildRestartBacklog(b, src, restartPrinters, restartTasks)
	fi, err := os.Stat(src)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("backlog of %d tasks built in %s: %v, spool file %.1f MB", restartTasks, time.Since(setup).Round(time.Millisecond), states, float64(fi.Size())/1e6)

	emu := emulatorBaseline(b, restartPrinters, restartTasks)
	emuRate := float64(restartTasks) / emu.Seconds()
	b.Logf("emulator baseline: %d jobs in %s, %.0f jobs/s", restartTasks, emu.Round(time.Millisecond), emuRate)

	var sum restartResult
	for i := 0; i < b.N; i++ {
		heap, rss := restartMemory(b, src, filepath.Join(dir, fmt.Sprintf("mem%d.db", i)), restartTasks)
		r := restartTimed(b, src, filepath.Join(dir, fmt.Sprintf("run%d.db", i)), restartTasks)
		b.Logf("iteration %d: spool open %s, ready %s, first ticket %s, %d printed at ready, drained in %s (%.0f tasks/s, %.1f MB of page cache dirtied), heap %.0f B/task, rss %.1f MB",
			i, r.open.Round(time.Millisecond), r.ready.Round(time.Millisecond), r.first.Round(time.Millisecond), r.printedAtReady, r.drain.Round(time.Millisecond),
			float64(restartTasks)/r.drain.Seconds(), r.diskWritten/1e6, heap, rss)
		sum.open += r.open
		sum.ready += r.ready
		sum.first += r.first
		sum.drain += r.drain
		sum.printedAtReady += r.printedAtReady
		sum.heap += heap
		sum.rss += rss
		sum.diskWritten += r.diskWritten
	}
	n := float64(b.N)
	drain := sum.drain.Seconds() / n
	b.ReportMetric(float64(sum.open.Microseconds())/1000/n, "open-ms")
	b.ReportMetric(float64(sum.ready.Microseconds())/1000/n, "ready-ms")
	b.ReportMetric(float64(sum.first.Microseconds())/1000/n, "first-ticket-ms")
	b.ReportMetric(drain, "drain-s")
	b.ReportMetric(float64(restartTasks)/drain, "tasks/s")
	b.ReportMetric(float64(sum.printedAtReady)/n, "printed-at-ready")
	b.ReportMetric(sum.heap/n, "heap-B/task")
	if sum.rss > 0 {
		b.ReportMetric(sum.rss/n, "rss-MB")
	}
	if sum.diskWritten > 0 {
		b.ReportMetric(sum.diskWritten/n/restartTasks/1024, "dirtied-KB/task")
	}
	b.ReportMetric(emuRate, "emu-tasks/s")
	b.ReportMetric(100*float64(restartTasks)/drain/emuRate, "drain-%emu")
}

type restartResult struct {
	open, ready, first time.Duration // open: spool.Open of the copied file
	drain              time.Duration
	printedAtReady     int
	heap, rss          float64
	diskWritten        float64 // bytes this process wrote to storage from start to drained
}

// restartTimed runs one timed restart over a copy of src at dst and waits
// until every task has printed.
func restartTimed(b *testing.B, src, dst string, total int) restartResult {
	copyFile(b, src, dst)
	opened := time.Now()
	sp, err := spool.Open(dst, spool.Options{DefaultTimeout: restartTimeout})
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Close()
	var r restartResult
	r.open = time.Since(opened)
	f := newRestartFleet(b, restartPrinters)
	defer f.close()
	c := newDrainCounter(total)
	a, err := New(f.cfg, sp, Options{Logger: testLogger(), Observe: c.observe, StopGrace: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	limit := time.NewTimer(restartLimit)
	defer limit.Stop()

	io0 := procIO("write_bytes")
	b.StartTimer()
	start := time.Now()
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
		r.ready = time.Since(start)
		r.printedAtReady = int(f.printed())
	case err := <-done:
		b.Fatalf("agent stopped before Ready: %v", err)
	case <-limit.C:
		b.Fatalf("not ready after %s", restartLimit)
	}
	select {
	case <-f.firstCh:
		r.first = time.Unix(0, f.first.Load()).Sub(start)
	case err := <-done:
		b.Fatalf("agent stopped before the first ticket: %v", err)
	case <-limit.C:
		b.Fatalf("no ticket after %s", restartLimit)
	}
	select {
	case <-c.done:
		r.drain = time.Since(start)
	case err := <-done:
		b.Fatalf("agent stopped while draining: %v", err)
	case <-limit.C:
		b.Fatalf("drain not done after %s: %d printed, %d ended otherwise, %d spool errors", restartLimit, c.printed.Load(), c.other.Load(), c.errs.Load())
	}
	b.StopTimer()
	r.diskWritten = procIO("write_bytes") - io0

	cancel()
	if err := <-done; err != nil {
		b.Fatalf("agent run: %v", err)
	}
	if n := c.other.Load(); n > 0 {
		b.Fatalf("%d tasks ended other than PRINTED", n)
	}
	if n := c.errs.Load(); n > 0 {
		b.Logf("%d spool write errors while draining", n)
	}
	f.checkTickets(b, total)
	return r
}

// restartMemory restores a copy of src at dst with every job held at the
// printer's door, and returns the Go heap per held task and the process's
// RSS in MB (0 where /proc is missing) once the backlog is restored.
func restartMemory(b *testing.B, src, dst string, total int) (heapPerTask, rssMB float64) {
	copyFile(b, src, dst)
	sp, err := spool.Open(dst, spool.Options{DefaultTimeout: restartTimeout})
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Close()
	f := newRestartFleet(b, restartPrinters)
	defer f.close()
	gate := make(chan struct{})
	opts := Options{Logger: testLogger(), StopGrace: 5 * time.Second, OpenPrinter: func(pc *config.Printer) Printer {
		return gatedPrinter{Printer: OpenDevice(pc), gate: gate}
	}}
	debug.FreeOSMemory()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	a, err := New(f.cfg, sp, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-done:
		b.Fatalf("agent stopped before Ready: %v", err)
	case <-time.After(restartLimit):
		b.Fatalf("not ready after %s", restartLimit)
	}
	debug.FreeOSMemory()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	rssMB = vmRSS() / (1 << 20)
	if n := f.printed(); n != 0 {
		b.Fatalf("%d tickets printed through a closed gate", n)
	}
	heapPerTask = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(total)
	b.Logf("memory at ready: heap alloc %.1f → %.1f MB (in use %.1f MB), rss %.1f MB",
		float64(before.HeapAlloc)/(1<<20), float64(after.HeapAlloc)/(1<<20), float64(after.HeapInuse)/(1<<20), rssMB)
	// Let the jobs in flight finish and stop.
	close(gate)
	cancel()
	if err := <-done; err != nil {
		b.Fatalf("agent run: %v", err)
	}
	return heapPerTask, rssMB
}

// gatedPrinter holds every Print until gate closes; Status passes through,
// so the lanes see a ready printer and restore runs as usual.
type gatedPrinter struct {
	Printer
	gate <-chan struct{}
}

func (g gatedPrinter) Print(ctx context.Context, job []byte, id uint64) (escpos.Confirmation, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return escpos.ConfirmNone, ctx.Err()
	}
	return g.Printer.Print(ctx, job, id)
}

// vmRSS returns the process's resident set in bytes from /proc/self/status,
// or 0 where that file does not exist.
func vmRSS() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// raceBuild reports whether the test binary was built with -race.
func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// procIO returns a field of /proc/self/io (bytes), or 0 where that file
// does not exist.
func procIO(field string) float64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

// drainCounter counts the tasks that reached a terminal state, from Observe,
// and closes done once all total have.
type drainCounter struct {
	total                int64
	printed, other, errs atomic.Int64
	done                 chan struct{}
	once                 sync.Once
}

func newDrainCounter(total int) *drainCounter {
	return &drainCounter{total: int64(total), done: make(chan struct{})}
}

func (c *drainCounter) observe(e Event) {
	if e.Task == nil {
		return
	}
	if e.Err != nil {
		c.errs.Add(1)
		return
	}
	var n int64
	switch e.Task.State {
	case spool.StatePrinted:
		n = c.printed.Add(1) + c.other.Load()
	case spool.StateTimedOut, spool.StateFailed, spool.StateCanceled:
		n = c.other.Add(1) + c.printed.Load()
	default:
		return
	}
	if n >= c.total {
		c.once.Do(func() { close(c.done) })
	}
}

// restartFleet is a set of fresh emulated Epson printers on loopback and an
// agent config naming them p0, p1, …
type restartFleet struct {
	printers []*printertest.Printer
	cfg      *config.Config
	tickets  []atomic.Int64 // tickets cut per printer
	first    atomic.Int64   // unix ns of the first ticket cut, 0 before
	firstCh  chan struct{}  // closed at the first ticket
	once     sync.Once
	// onFirst, if set before any ticket, is called at the first ticket.
	onFirst func()
}

func newRestartFleet(tb testing.TB, n int) *restartFleet {
	tb.Helper()
	f := &restartFleet{tickets: make([]atomic.Int64, n), firstCh: make(chan struct{})}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "data_dir = %q\nlisten = \"127.0.0.1:8631\"\napi_token = \"test-token-0123456789abcdef\"\n%s[defaults]\ntimeout = %q\n", tb.TempDir(), harnessSpool, restartTimeout.String())
	for i := 0; i < n; i++ {
		p := printertest.New(printertest.Options{Name: fmt.Sprintf("p%d", i), Model: printertest.ModelEpson, OnTicket: func(printertest.Ticket) {
			f.tickets[i].Add(1)
			if f.first.CompareAndSwap(0, time.Now().UnixNano()) {
				f.once.Do(func() {
					if f.onFirst != nil {
						f.onFirst()
					}
					close(f.firstCh)
				})
			}
		}})
		if err := p.ListenTCP(); err != nil {
			f.close()
			tb.Fatal(err)
		}
		f.printers = append(f.printers, p)
		fmt.Fprintf(&cfg, "[[printers]]\nname = \"p%d\"\nurl = \"tcp://%s\"\n", i, p.Addr())
	}
	c, err := config.Parse(filepath.Join(tb.TempDir(), "printgate.toml"), []byte(cfg.String()))
	if err != nil {
		f.close()
		tb.Fatalf("config: %v\n%s", err, cfg.String())
	}
	f.cfg = c
	return f
}

func (f *restartFleet) close() {
	for _, p := range f.printers {
		p.Close()
	}
}

// printed is the number of tickets cut on every printer together.
func (f *restartFleet) printed() int64 {
	var n int64
	for i := range f.tickets {
		n += f.tickets[i].Load()
	}
	return n
}

// checkTickets fails unless each printer cut exactly its share of total
// tasks (restartTask spreads them round robin): none lost, none twice.
func (f *restartFleet) checkTickets(tb testing.TB, total int) {
	tb.Helper()
	n := len(f.printers)
	for i := range f.printers {
		want := int64(total / n)
		if i < total%n {
			want++
		}
		if got := f.tickets[i].Load(); got != want {
			tb.Errorf("printer p%d cut %d tickets, want %d", i, got, want)
		}
	}
}

// restartTask is task i of a backlog over printers printers: a kitchen
// ticket of about 150 bytes, three in four as raw ESC/POS and one in four
// as a ticket document, one in ten urgent.
func restartTask(i, printers int) spool.NewTask {
	no := fmt.Sprintf("R%07d_KITCHEN_v1", i)
	nt := spool.NewTask{TaskNo: no, Printer: fmt.Sprintf("p%d", i%printers), Timeout: restartTimeout}
	if i%10 == 0 {
		nt.Priority = spool.PriorityUrgent
	}
	if i%4 == 3 {
		nt.Document = []byte(fmt.Sprintf(`{"lines":[{"text":"TICKET %s"},{"text":"Table 12   Covers 4"},{"text":"2x Kung Pao chicken"},{"text":"1x Rice, no onion"},{"cut":"partial"}]}`, no))
	} else {
		nt.Payload = restartPayload(no)
	}
	return nt
}

// restartPayload is a raw ESC/POS kitchen ticket for task no, ending in a
// partial cut (GS V 66 0).
func restartPayload(no string) []byte {
	var b bytes.Buffer
	b.WriteString("\x1b\x61\x01\x1b\x45\x01TICKET " + no + "\n\x1b\x45\x00\x1b\x61\x00")
	b.WriteString("Table 12           Covers 4\n")
	b.WriteString("2x Kung Pao chicken\n1x Steamed rice, no onion\n1x Hot and sour soup\n")
	b.WriteString("\x1b\x64\x03\x1d\x56\x42\x00")
	return b.Bytes()
}

// buildRestartBacklog fills a new spool at path with total tasks spread
// round robin over printers printers, in the states a killed agent leaves:
// per lane 40% QUEUED, 40% PARKED, 20% left ACCEPTED, every 250th task in
// RETRY_WAIT (due two seconds after it was built) and one task SENDING. It
// accepts from many goroutines, so the commit loop batches, and moves the
// tasks a thousand per TransitionBatch. It returns the count per state and
// closes the spool.
func buildRestartBacklog(tb testing.TB, path string, printers, total int) map[spool.State]int {
	tb.Helper()
	sp, err := spool.Open(path, spool.Options{DefaultTimeout: restartTimeout})
	if err != nil {
		tb.Fatal(err)
	}
	defer sp.Close()
	parallel(tb, 64, total, func(i int) error {
		_, dup, err := sp.Accept(restartTask(i, printers))
		if err == nil && dup {
			err = errors.New("duplicate")
		}
		return err
	})

	states := map[spool.State]int{}
	due := time.Now().Add(2 * time.Second)
	one := 1
	var moves []spool.Move
	for i := 0; i < total; i++ {
		m := spool.Move{TaskNo: fmt.Sprintf("R%07d_KITCHEN_v1", i), From: spool.StateAccepted}
		switch k := i / printers; {
		case k == 0:
			m.Path = []spool.State{spool.StateQueued, spool.StateSending}
			m.Change = spool.Change{Attempts: &one}
		case k%250 == 1:
			m.Path = []spool.State{spool.StateQueued, spool.StateSending, spool.StateRetryWait}
			m.Change = spool.Change{Attempts: &one, NextDue: &due, Reason: "send failed"}
		case k%10 < 4:
			m.Path = []spool.State{spool.StateQueued}
		case k%10 < 8:
			m.Path = []spool.State{spool.StateParked}
			m.Change = spool.Change{Reason: spool.ReasonDeviceOffline}
		default:
			states[spool.StateAccepted]++
			continue
		}
		states[m.Path[len(m.Path)-1]]++
		moves = append(moves, m)
	}
	const chunk = 1000
	parallel(tb, 8, (len(moves)+chunk-1)/chunk, func(c int) error {
		batch := moves[c*chunk : min((c+1)*chunk, len(moves))]
		results, err := sp.TransitionBatch(batch)
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	})
	return states
}

// parallel runs fn(0..n-1) on workers goroutines and fails tb on the first
// error.
func parallel(tb testing.TB, workers, n int, fn func(i int) error) {
	tb.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("item %d: %w", i, err)
					}
					mu.Unlock()
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		tb.Fatal(first)
	}
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

// emulatorBaseline measures the emulators alone: fresh printers, one
// goroutine per printer sending that printer's share of total jobs (the
// bytes the agent would send for restartTask) through escpos.Device, the
// agent's driver, each waiting for its completion proof as the agent does.
// It returns the time from the first dial until every ticket is cut.
func emulatorBaseline(tb testing.TB, printers, total int) time.Duration {
	tb.Helper()
	f := newRestartFleet(tb, printers)
	defer f.close()
	jobs := make([][][]byte, printers)
	for i := 0; i < total; i++ {
		nt := restartTask(i, printers)
		job := nt.Payload
		if len(nt.Document) > 0 {
			doc, err := escpos.ParseDocument(nt.Document)
			if err != nil {
				tb.Fatal(err)
			}
			if job, err = escpos.Render(doc, f.cfg.Printers[i%printers].Profile, escpos.RenderOptions{}); err != nil {
				tb.Fatal(err)
			}
		}
		jobs[i%printers] = append(jobs[i%printers], job)
	}
	devs := make([]*escpos.Device, printers)
	for p := range devs {
		devs[p] = OpenDevice(&f.cfg.Printers[p]).(*escpos.Device)
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartLimit)
	defer cancel()
	start := time.Now()
	parallel(tb, printers, printers, func(p int) error {
		for k, job := range jobs[p] {
			conf, err := devs[p].Print(ctx, job, uint64(k*printers+p+1))
			if err != nil {
				return fmt.Errorf("printer p%d job %d: %w", p, k, err)
			}
			if conf != escpos.ConfirmPrinted {
				return fmt.Errorf("printer p%d job %d confirmed only %s", p, k, conf)
			}
		}
		return nil
	})
	elapsed := time.Since(start)
	for _, d := range devs {
		d.Close()
	}
	f.checkTickets(tb, total)
	return elapsed
}

// TestRestartFirstTicketBeforeBacklogLoads ensures restore streams: with
// 20,000 tasks spooled for one printer, the first ticket is cut while the
// agent is still restoring (before Ready), not after the whole backlog has
// been read. Restore hands a lane its backlog 512 tasks at a time and the
// lane starts printing after the first page. The test holds the restore
// after the first page until a ticket is cut (bounded by waitLimit), so
// the order does not depend on how fast the machine reads the other pages:
// a lane that waited for its whole backlog cuts nothing in that time.
// Under -race, building the spool alone takes 15–20 s on the project
// machine, so the backlog is 5,000 tasks (10 pages) there. Skipped with
// -short.
func TestRestartFirstTicketBeforeBacklogLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a spool of 20,000 tasks")
	}
	total := 20_000
	if raceBuild() {
		total = 5_000
	}
	path := filepath.Join(t.TempDir(), "spool.db")
	buildRestartBacklog(t, path, 1, total)
	sp, err := spool.Open(path, spool.Options{DefaultTimeout: restartTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	f := newRestartFleet(t, 1)
	defer f.close()
	a, err := New(f.cfg, sp, Options{Logger: testLogger(), StopGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var readyAtFirst atomic.Bool
	f.onFirst = func() {
		select {
		case <-a.Ready():
			readyAtFirst.Store(true)
		default:
		}
	}
	var pages atomic.Int32
	testHookRestoredPage = func(string, int) {
		if pages.Add(1) != 1 {
			return
		}
		select {
		case <-f.firstCh:
		case <-time.After(waitLimit):
		}
	}
	defer func() { testHookRestoredPage = nil }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
	}()
	limit := time.NewTimer(waitLimit)
	defer limit.Stop()
	select {
	case <-f.firstCh:
	case err := <-done:
		t.Fatalf("agent stopped before the first ticket: %v", err)
	case <-limit.C:
		t.Fatalf("no ticket within %s of start", waitLimit)
	}
	first := time.Unix(0, f.first.Load()).Sub(start)
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("agent stopped before Ready: %v", err)
	case <-limit.C:
		t.Fatalf("not ready within %s of start", waitLimit)
	}
	ready := time.Since(start)
	t.Logf("first ticket %s after start, ready after %s, %d tickets printed by then", first.Round(time.Millisecond), ready.Round(time.Millisecond), f.printed())
	if readyAtFirst.Load() {
		t.Errorf("the first ticket was cut only after the whole backlog of %d tasks was restored: restore does not stream", total)
	}
	if n := pages.Load(); n < 2 {
		t.Errorf("the backlog of %d tasks reached the lane in %d page(s): restore does not stream", total, n)
	}
}
