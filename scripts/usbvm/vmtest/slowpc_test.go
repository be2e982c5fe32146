package vmtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// The slow store PC (make bench-slowpc; docs/BENCHMARKS.md "Slow store
// PC"): the real printgate in the
// VM that scripts/usbvm/bench-slowpc.sh boots with the spool on a throttled
// virtual disk (USBVM_SPOOL is where it is mounted), against emulated
// printers on loopback. Every figure is one "SLOWPC <name> <value> <unit>"
// line on stdout, which the host script collects.

// slowPrinters is how many emulated printers the agent has (a busy
// store's kitchen, bar and counters: docs/BENCHMARKS.md "Slow store PC"
// measures 8 printers at 1 ticket/s each).
const slowPrinters = 8

// figure prints one result line for the host script.
func figure(name string, v float64, unit string) {
	fmt.Printf("SLOWPC %s %.1f %s\n", name, v, unit)
}

// tailBuffer keeps the last 64 KiB of a child's output: the agent logs a
// line per transition, 20,000 tasks' worth would not fit the VM's memory.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 64<<10 {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-32<<10:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// bench is one slow-PC run: the printers, the ticket counters and the agent.
type bench struct {
	t        *testing.T
	printers []*printertest.Printer
	cut      atomic.Int64 // tickets cut on all printers
	firstCut atomic.Int64 // unix nanoseconds of the first ticket after reset
	config   string
	base     string
	tok      string
	client   *http.Client
	cmd      *exec.Cmd
	done     chan error
	logs     *tailBuffer
	seq      atomic.Int64
	dir      string // the bench directory on the spool disk
}

func newBench(t *testing.T, dir string) *bench {
	b := &bench{t: t, dir: dir, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var printers strings.Builder
	for i := range slowPrinters {
		p := printertest.New(printertest.Options{Name: fmt.Sprintf("p%d", i), Model: printertest.ModelEpson,
			OnTicket: func(printertest.Ticket) {
				b.cut.Add(1)
				b.firstCut.CompareAndSwap(0, time.Now().UnixNano())
			}})
		if err := p.ListenTCP(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		b.printers = append(b.printers, p)
		fmt.Fprintf(&printers, "\n[[printers]]\nname = \"p%d\"\nurl = \"tcp://%s\"\n", i, p.Addr())
	}
	tokPath := filepath.Join(dir, "api-token.txt")
	mustPG(t, 60*time.Second, "token", "--out", tokPath)
	tok, err := os.ReadFile(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	b.tok = strings.TrimSpace(string(tok))
	port := freePort(t)
	b.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	b.config = filepath.Join(dir, "printgate.toml")
	// No rate limit on the API: the bursts and the 20,000 fill go past the
	// default 200/s. The spool may use 1 GiB of the 4 GiB disk.
	// A day's deadline: the 20,000 spooled while the printers are off must
	// still be due at the restart (the default 90 s would time them out).
	body := fmt.Sprintf("data_dir = '%s'\nlisten = \"127.0.0.1:%d\"\napi_token_file = '%s'\n\n[defaults]\ntimeout = \"24h\"\n\n[spool]\nmax_size = \"1GiB\"\nrate_api = 0\n%s",
		filepath.Join(dir, "data"), port, tokPath, printers.String())
	if err := os.WriteFile(b.config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

// start runs the agent and returns the times from exec to its /healthz
// answering (the API serves once every lane holds its backlog: Ready).
func (b *bench) start() (ready time.Duration) {
	t := b.t
	b.firstCut.Store(0)
	b.logs = &tailBuffer{}
	b.cmd = exec.Command(exe, "run", "--config", b.config)
	b.cmd.Stdout, b.cmd.Stderr = b.logs, b.logs
	t0 := time.Now()
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.done = make(chan error, 1)
	go func(c *exec.Cmd, done chan error) { done <- c.Wait() }(b.cmd, b.done)
	deadline := t0.Add(5 * time.Minute)
	for {
		if code, _ := b.get("/healthz"); code == 200 {
			return time.Since(t0)
		}
		select {
		case err := <-b.done:
			t.Fatalf("agent exited before it answered /healthz (%v):\n%s", err, b.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not answer /healthz within 5 min:\n%s", b.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the agent with sig and waits for it.
func (b *bench) stop(sig syscall.Signal) {
	if b.cmd == nil {
		return
	}
	b.cmd.Process.Signal(sig)
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd = nil
}

func (b *bench) get(path string) (int, error) {
	req, _ := http.NewRequest("GET", b.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+b.tok)
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// submit posts one kitchen ticket to printer i%8 and returns how long the
// accept took; it fails t on anything but 202.
func (b *bench) submit(i int) time.Duration {
	n := b.seq.Add(1)
	no := fmt.Sprintf("SLOW%07d_v1", n)
	body := fmt.Sprintf(`{"task_no":%q,"printer":"p%d","document":{"lines":[{"text":"TABLE 12   %s"},{"text":"2 x beef noodles      38.00"},{"text":"1 x dumplings (12)    22.00"},{"text":"1 x iced tea           6.00"},{"text":"   no ice"},{"cut":"partial"}]}}`, no, i%slowPrinters, no)
	req, _ := http.NewRequest("POST", b.base+"/api/v1/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.tok)
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Errorf("submit %s: %v", no, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if resp.StatusCode != 202 {
		b.t.Errorf("submit %s: HTTP %d, want 202", no, resp.StatusCode)
	}
	return d
}

// openLoop submits n tickets at rate per second, each on its own goroutine
// at its scheduled time (a slow accept does not delay the next one), and
// returns the accept latencies.
func (b *bench) openLoop(rate float64, n int) []time.Duration {
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		time.Sleep(time.Until(t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		wg.Go(func() { lat[i] = b.submit(i) })
	}
	wg.Wait()
	return lat
}

// closedLoop submits n tickets from workers goroutines as fast as the agent
// takes them and returns the time to accept all.
func (b *bench) closedLoop(n, workers int) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				b.submit(i)
			}
		})
	}
	wg.Wait()
	return time.Since(t0)
}

// waitCut waits until n tickets are cut in all, up to limit, and returns
// false on the limit.
func (b *bench) waitCut(n int64, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for b.cut.Load() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// procStatus reads a kB field (VmHWM, VmRSS) of the agent's /proc status.
func (b *bench) procStatus(field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}

// cpuTime is the agent's user+system CPU time so far.
func (b *bench) cpuTime() time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the ")" of the command name: utime and stime are the
	// 12th and 13th (fields 14 and 15 of the whole line), in clock ticks.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return time.Duration(u+s) * 10 * time.Millisecond
}

// diskStat is the spool disk's completed writes, KiB written and flushes
// (/sys/block/vda/stat), to tell what one accepted ticket costs the disk.
type diskStat struct{ writes, kib, flushes float64 }

func readDisk() diskStat {
	raw, err := os.ReadFile("/sys/block/vda/stat")
	if err != nil {
		return diskStat{}
	}
	f := strings.Fields(string(raw))
	n := func(i int) float64 {
		if i >= len(f) {
			return 0
		}
		v, _ := strconv.ParseFloat(f[i], 64)
		return v
	}
	return diskStat{writes: n(4), kib: n(6) / 2, flushes: n(15)}
}

// diskFigures reports the disk's work since d0 per ticket.
func diskFigures(name string, d0 diskStat, tickets int) {
	d := readDisk()
	figure(name+"-disk-writes/ticket", (d.writes-d0.writes)/float64(tickets), "IOs")
	figure(name+"-disk-KiB/ticket", (d.kib-d0.kib)/float64(tickets), "KiB")
	figure(name+"-disk-flushes/ticket", (d.flushes-d0.flushes)/float64(tickets), "flushes")
}

// cpuRef times a fixed CPU job like the agent's own work (JSON encode and
// decode of a task-sized record, plain Go code, no special instructions) on
// one goroutine and returns round trips per second.
func cpuRef() float64 {
	type line struct {
		Text string `json:"text,omitempty"`
		Cut  string `json:"cut,omitempty"`
	}
	type rec struct {
		TaskNo   string            `json:"task_no"`
		Printer  string            `json:"printer"`
		State    string            `json:"state"`
		Attempts int               `json:"attempts"`
		Lines    []line            `json:"lines"`
		Meta     map[string]string `json:"meta"`
	}
	v := rec{TaskNo: "SLOW0000001_v1", Printer: "p0", State: "QUEUED", Lines: []line{{Text: "TABLE 12"}, {Text: "2 x beef noodles      38.00"}, {Text: "1 x dumplings (12)    22.00"}, {Cut: "partial"}}, Meta: map[string]string{"origin": "local", "reason": "DEVICE_OFFLINE"}}
	const n = 5000
	t0 := time.Now()
	for range n {
		raw, _ := json.Marshal(v)
		var w rec
		json.Unmarshal(raw, &w)
	}
	return n / time.Since(t0).Seconds()
}

func percentiles(name string, lat []time.Duration) {
	// A failed submit (an error is logged) has no latency: count it.
	s := slices.DeleteFunc(slices.Clone(lat), func(d time.Duration) bool { return d == 0 })
	if failed := len(lat) - len(s); failed > 0 {
		figure(name+"-failed", float64(failed), "requests")
	}
	if len(s) == 0 {
		return
	}
	slices.Sort(s)
	q := func(p float64) float64 {
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	figure(name+"-p50", q(0.50), "ms")
	figure(name+"-p99", q(0.99), "ms")
	figure(name+"-max", float64(s[len(s)-1].Microseconds())/1000, "ms")
}

// TestSlowPC measures accept latency, a burst, printer-speed keeping up,
// and a restart with 20,000 spooled (see docs/BENCHMARKS.md, "Slow store
// PC").
func TestSlowPC(t *testing.T) {
	spoolDir := os.Getenv("USBVM_SPOOL")
	if exe == "" || spoolDir == "" {
		t.Skip("PRINTGATE_BIN and USBVM_SPOOL are not set: this runs inside the VM of make bench-slowpc")
	}
	// The CPU's speed on one fixed job, to compare the VM's (TCG) with a
	// real machine's: run the same test binary's figure on the host.
	figure("cpu-json", cpuRef(), "round-trips/s")
	if os.Getenv("SLOWPC_ONLY") == "cpu" {
		return
	}
	dir, err := os.MkdirTemp(spoolDir, "bench")
	if err != nil {
		t.Fatal(err)
	}
	b := newBench(t, dir)
	defer b.stop(syscall.SIGTERM)
	figure("ready-empty", float64(b.start().Milliseconds()), "ms")
	if os.Getenv("SLOWPC_ONLY") != "restart" {
		b.loadPhases()
	}
	b.stop(syscall.SIGTERM)
	b.restartPhase()
}

// loadPhases measures accepts at 10 and 100 tasks/s, a 1,000 burst and 8
// printers at one ticket a second, on the running agent.
func (b *bench) loadPhases() {
	t := b.t

	// Accepts at the store peak and at ten times it, printers at full speed.
	d0 := readDisk()
	lat := b.openLoop(10, 300)
	percentiles("accept-10/s", lat)
	b.waitCut(300, 2*time.Minute)
	diskFigures("accept-10/s", d0, 300)
	d0 = readDisk()
	lat = b.openLoop(100, 1000)
	percentiles("accept-100/s", lat)
	b.waitCut(1300, 5*time.Minute)
	diskFigures("accept-100/s", d0, 1000)

	// A 1,000-ticket burst from 32 connections.
	cut := b.cut.Load()
	t0 := time.Now()
	figure("burst-1000-accepted", float64(b.closedLoop(1000, 32).Milliseconds()), "ms")
	if !b.waitCut(cut+1000, 10*time.Minute) {
		t.Errorf("burst: %d of 1000 cut after 10 min", b.cut.Load()-cut)
	}
	figure("burst-1000-printed", float64(time.Since(t0).Milliseconds()), "ms")
	figure("rss-hwm-after-burst", b.procStatus("VmHWM"), "MiB")

	// Printer speed: 8 printers at one ticket a second each, fed 8 tickets
	// a second for 60 s. The agent keeps up when every ticket is cut about
	// a second after its printer took the previous one, and its CPU time
	// shows how much of the one vCPU that costs.
	one := b.printers[0].Received()
	cut = b.cut.Load()
	b.submit(0)
	b.waitCut(cut+1, time.Minute)
	perTicket := int(b.printers[0].Received() - one)
	for _, p := range b.printers {
		p.SetSlow(perTicket)
	}
	figure("ticket-bytes", float64(perTicket), "B")
	cut = b.cut.Load()
	cpu0, t0 := b.cpuTime(), time.Now()
	lat = b.openLoop(8, 480)
	fed := time.Since(t0)
	ok := b.waitCut(cut+480, 5*time.Minute)
	all := time.Since(t0)
	cpu := b.cpuTime() - cpu0
	if !ok {
		t.Errorf("printer speed: %d of 480 cut after 5 min", b.cut.Load()-cut)
	}
	percentiles("accept-8/s-printer-speed", lat)
	figure("printer-speed-fed", fed.Seconds(), "s")
	figure("printer-speed-all-cut", all.Seconds(), "s")
	figure("printer-speed-agent-cpu", 100*cpu.Seconds()/all.Seconds(), "%")
	// The printers alone would cut the 480 in 60 s (one ticket a second
	// each, fed as fast): the rate reached is the agent's share of that.
	figure("printer-speed-reached", 100*(480/all.Seconds())/slowPrinters, "%")
	for _, p := range b.printers {
		p.SetSlow(0)
	}
}

// restartPhase spools 20,000 tickets (SLOWPC_FILL) with the printers off
// and measures restarts on that backlog.
func (b *bench) restartPhase() {
	t := b.t

	// Restart with 20,000 spooled: the printers offline while they are
	// accepted, the agent killed (as a power cut leaves it), the printers
	// back, a fresh start.
	for _, p := range b.printers {
		if err := p.SetFault(printertest.FaultOffline, true); err != nil {
			t.Fatal(err)
		}
	}
	spooled := 20000
	if n, err := strconv.Atoi(os.Getenv("SLOWPC_FILL")); err == nil && n > 0 {
		spooled = n // a smaller fill to try the benchmark out
	}
	b.start()
	fill := b.closedLoop(spooled, 32)
	figure(fmt.Sprintf("fill-%d-accepted", spooled), fill.Seconds(), "s")
	figure("fill-accept-rate", float64(spooled)/fill.Seconds(), "tasks/s")
	figure("rss-hwm-fill", b.procStatus("VmHWM"), "MiB")
	b.stop(syscall.SIGKILL)
	if fi, err := os.Stat(filepath.Join(b.dir, "data", "spool.db")); err == nil {
		figure("spool-file", float64(fi.Size())/(1<<20), "MiB")
	}
	for _, p := range b.printers {
		if err := p.SetFault(printertest.FaultOffline, false); err != nil {
			t.Fatal(err)
		}
	}
	// restart starts the agent on the spooled backlog and reports the
	// times to its first ticket and to Ready. cold drops the page cache
	// first, as a reboot of the PC leaves it (the spool file read from the
	// throttled disk); warm is the agent alone restarted (an upgrade, a
	// crash), the file still cached.
	restart := func(name string, cold bool) {
		if cold {
			exec.Command("sync").Run() // busybox sync: the dirty pages must go before the cache does
			// The whole page cache only inside the VM (init.sh says so):
			// run on a host as root it emptied a shared machine's cache
			// once. Elsewhere the spool file's own pages go, the part of a
			// reboot the restart reads.
			if os.Getenv("USBVM_GUEST") == "1" {
				if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200); err != nil {
					t.Logf("drop caches: %v (the restart is warm)", err)
				}
			} else if err := evictSpool(filepath.Join(b.dir, "data", "spool.db")); err != nil {
				t.Logf("evict the spool file's pages: %v (the restart is warm)", err)
			}
		}
		t0 := time.Now()
		ready := b.start()
		for b.firstCut.Load() == 0 && time.Since(t0) < ready+time.Minute {
			time.Sleep(5 * time.Millisecond)
		}
		if fc := b.firstCut.Load(); fc != 0 {
			figure(fmt.Sprintf("restart-%s-%d-first-ticket", name, spooled), float64(time.Unix(0, fc).Sub(t0).Milliseconds()), "ms")
		} else {
			t.Errorf("%s restart: no ticket cut within a minute of Ready", name)
		}
		figure(fmt.Sprintf("restart-%s-%d-ready", name, spooled), float64(ready.Milliseconds()), "ms")
	}
	restart("cold", true)
	b.stop(syscall.SIGKILL)
	cut := b.cut.Load()
	t0 := time.Now()
	restart("warm", false)
	time.Sleep(time.Until(t0.Add(30 * time.Second)))
	figure("restart-printed-in-30s", float64(b.cut.Load()-cut), "tickets")
	figure("rss-hwm-restart-30s", b.procStatus("VmHWM"), "MiB")
	figure("rss-now-restart-30s", b.procStatus("VmRSS"), "MiB")
	if t.Failed() {
		t.Logf("agent log tail:\n%s", b.logs.String())
	}
	b.stop(syscall.SIGTERM)
}

// evictSpool drops one file's pages from the page cache.
func evictSpool(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return fadviseDontNeed(f)
}
