//go:build linux

package link

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

// The cloud link's benchmarks (docs/BENCHMARKS.md "Cloud link").
// They run only with -bench, on loopback, against cloudtest served by an
// httptest server on 127.0.0.1. This file is linux-only because it reads
// /proc/self/status and raises RLIMIT_NOFILE.

// benchBound bounds every wait of these benchmarks; a benchmark that needs
// longer fails instead of hanging.
const benchBound = 2 * time.Minute

// replayEvents is the outbox depth BenchmarkReplay drains.
const replayEvents = 100_000

// benchBackend is a Backend that takes no jobs: the benchmarks send none.
type benchBackend struct{}

func (benchBackend) Submit(context.Context, spool.NewTask) (*spool.Task, bool, error) {
	return nil, false, errUnavailable
}
func (benchBackend) Reprint(context.Context, string) (*spool.Task, error) {
	return nil, errUnavailable
}
func (benchBackend) Cancel(context.Context, string) (*spool.Task, error) {
	return nil, errUnavailable
}
func (benchBackend) Printers() []wire.Printer {
	return []wire.Printer{{Name: "kitchen", State: "READY"}}
}

// emptyOutbox is an Outbox with nothing to send, shared by every client of
// BenchmarkReconnectStorm: the storm is about handshakes, not events, and
// 1,000 bbolt files would only add disk noise.
type emptyOutbox struct{}

func (emptyOutbox) ReadOutbox(int) ([]spool.OutboxEvent, error) { return nil, nil }
func (emptyOutbox) AckOutbox([][]byte) error                    { return nil }
func (emptyOutbox) OutboxDepth() (int, error)                   { return 0, nil }

// benchCloud is cloudtest on an httptest server on 127.0.0.1, its agent
// path behind h (nil: cloudtest's handler as is).
type benchCloud struct {
	cloud *cloudtest.Cloud
	srv   *httptest.Server
}

func newBenchCloud(wrap func(http.Handler) http.Handler) *benchCloud {
	c := cloudtest.New(cloudtest.Options{})
	h := c.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	return &benchCloud{cloud: c, srv: httptest.NewServer(h)}
}

func (c *benchCloud) url() string {
	return "ws" + strings.TrimPrefix(c.srv.URL, "http") + cloudtest.AgentPath
}

func (c *benchCloud) close() {
	c.cloud.Close()
	c.srv.Close()
}

// benchOptions are a link's options against c for agentID: no proxy (the
// cloud is on loopback), logs to log (nil: discarded).
func benchOptions(c *benchCloud, agentID string, out Outbox, log slog.Handler) Options {
	tok := c.cloud.IssueToken(agentID)
	if log == nil {
		log = slog.DiscardHandler
	}
	return Options{
		URL: c.url(), AgentID: agentID, Version: "bench",
		Token:   func() (string, error) { return tok, nil },
		Backend: benchBackend{}, Outbox: out,
		Logger: slog.New(log),
		Dialer: &websocket.Dialer{HandshakeTimeout: 15 * time.Second},
	}
}

// procStatusKiB reads a "Name:   123 kB" line of /proc/self/status.
func procStatusKiB(b *testing.B, name string) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("no %s in /proc/self/status", name)
	return 0
}

// memSample is the process's memory in MiB: resident (total, anonymous,
// file-backed: bbolt's mmap) and the Go heap live after a GC.
type memSample struct{ rss, anon, file, heap float64 }

func sampleMem(b *testing.B) memSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{
		rss:  procStatusKiB(b, "VmRSS") / 1024,
		anon: procStatusKiB(b, "RssAnon") / 1024,
		file: procStatusKiB(b, "RssFile") / 1024,
		heap: float64(ms.HeapAlloc) / (1 << 20),
	}
}

func (m *memSample) add(o memSample) {
	m.rss += o.rss
	m.anon += o.anon
	m.file += o.file
	m.heap += o.heap
}

func (m memSample) report(b *testing.B, n float64, when string) {
	b.ReportMetric(m.rss/n, "rss-"+when+"-MiB")
	b.ReportMetric(m.anon/n, "anon-"+when+"-MiB")
	b.ReportMetric(m.file/n, "file-"+when+"-MiB")
	b.ReportMetric(m.heap/n, "heap-"+when+"-MiB")
}

// resetPeakRSS resets VmHWM (Linux ≥ 4.0); it reports whether it could.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// buildReplaySpool writes replayEvents accepted tasks (one outbox event
// each) into a new spool at path, from 64 goroutines so the commit loop
// batches, and closes it.
func buildReplaySpool(b *testing.B, path string) {
	b.Helper()
	sp, err := spool.Open(path, spool.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Close()
	payload := []byte("\x1b@small ticket\n\x1dV\x00")
	var next atomic.Int64
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > replayEvents {
					return
				}
				if _, _, err := sp.Accept(spool.NewTask{TaskNo: fmt.Sprintf("T%07d", i), Printer: "kitchen", Payload: payload}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	if d, err := sp.OutboxDepth(); err != nil || d != replayEvents {
		b.Fatalf("template outbox depth %d (%v), want %d", d, err, replayEvents)
	}
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// BenchmarkReplay measures how long a link takes to hand a backlog of
// 100,000 outbox events to the cloud: from Run until the spool's outbox is
// empty (every event acknowledged) and the cloud recorded 100,000 events.
// The spool is built once, untimed, while no link runs; each iteration
// replays a fresh copy of it. It reports replay-s, events/s and the
// process's RSS before, after and at its peak during the replay; the cloud
// runs in the same process, so its 100,000 recorded events are in those
// figures too.
func BenchmarkReplay(b *testing.B) {
	template := filepath.Join(b.TempDir(), "template.db")
	t0 := time.Now()
	buildReplaySpool(b, template)
	b.Logf("built a spool of %d outbox events in %v", replayEvents, time.Since(t0).Round(time.Millisecond))

	for _, inFlight := range []int{DefaultMaxInFlight, 8} {
		b.Run(fmt.Sprintf("inflight=%d", inFlight), func(b *testing.B) {
			var secs, peak float64
			var before, after, teardown memSample
			peakOK := true
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "spool.db")
				if err := copyFile(path, template); err != nil {
					b.Fatal(err)
				}
				sp, err := spool.Open(path, spool.Options{})
				if err != nil {
					b.Fatal(err)
				}
				before.add(sampleMem(b))
				peakOK = resetPeakRSS() && peakOK
				b.StartTimer()

				s, a := replayOnce(b, sp, inFlight)
				b.StopTimer()
				secs += s
				after.add(a)
				peak += procStatusKiB(b, "VmHWM") / 1024
				if err := sp.Close(); err != nil {
					b.Fatal(err)
				}
				teardown.add(sampleMem(b))
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(secs/n, "replay-s")
			b.ReportMetric(replayEvents*n/secs, "events/s")
			before.report(b, n, "before")
			after.report(b, n, "after")
			teardown.report(b, n, "gone")
			if peakOK {
				b.ReportMetric(peak/n, "rss-peak-MiB")
			}
		})
	}
}

// replayOnce runs a link over sp until the outbox is drained and returns
// the seconds it took and the memory at that moment, the cloud and the
// link still up.
func replayOnce(b *testing.B, sp *spool.Spool, inFlight int) (secs float64, mem memSample) {
	const agent = "agent-replay"
	c := newBenchCloud(nil)
	defer c.close()
	opts := benchOptions(c, agent, sp, nil)
	opts.MaxInFlight = inFlight
	l, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchBound)
	defer cancel()
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	// Not WaitEvents: it copies every recorded event each time the cloud
	// records something, which costs more CPU than the replay itself at
	// 100,000 events. Agents reads counters.
	recorded := func() bool {
		for _, a := range c.cloud.Agents() {
			if a.AgentID == agent {
				return a.Events >= replayEvents
			}
		}
		return false
	}
	if err := c.cloud.Wait(ctx, recorded); err != nil {
		b.Fatalf("the cloud did not get %d events: %v", replayEvents, err)
	}
	// The cloud records a batch before it sends events_ack, so the last
	// acks may still be on their way: poll the depth (a counter read, one
	// read transaction) every millisecond, bounded by ctx.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		d, err := sp.OutboxDepth()
		if err != nil {
			b.Fatal(err)
		}
		if d == 0 {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("outbox depth still %d: %v", d, ctx.Err())
		case <-tick.C:
		}
	}
	secs = time.Since(start).Seconds()
	b.StopTimer()
	mem = sampleMem(b)
	b.StartTimer()
	for _, a := range c.cloud.Agents() {
		if a.AgentID == agent && (a.Events != replayEvents || a.EventsDropped != 0) {
			b.Fatalf("cloud: %d events, %d dropped, %d duplicates", a.Events, a.EventsDropped, a.DuplicateEvents)
		}
	}
	return secs, mem
}

// handshakeCounter counts upgrade requests on the agent path that are in
// flight: from the request reaching the handler until the upgrader
// hijacks the connection (it then writes 101 and the websocket starts), or
// until the handler returns without hijacking. It keeps the maximum, and
// the arrival time of every upgrade request once recording starts.
type handshakeCounter struct {
	next      http.Handler
	inflight  atomic.Int64
	peak      atomic.Int64
	recording atomic.Bool

	mu       sync.Mutex
	arrivals []time.Time
}

func (h *handshakeCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != cloudtest.AgentPath {
		h.next.ServeHTTP(w, r)
		return
	}
	if h.recording.Load() {
		now := time.Now()
		h.mu.Lock()
		h.arrivals = append(h.arrivals, now)
		h.mu.Unlock()
	}
	n := h.inflight.Add(1)
	for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
	}
	hw := &hijackWatch{ResponseWriter: w, end: func() { h.inflight.Add(-1) }}
	defer hw.ended()
	h.next.ServeHTTP(hw, r)
}

// reset starts a new measurement.
func (h *handshakeCounter) reset() {
	h.mu.Lock()
	h.arrivals = nil
	h.mu.Unlock()
	h.peak.Store(h.inflight.Load())
	h.recording.Store(true)
}

// hijackWatch ends a handshake when the connection is hijacked.
type hijackWatch struct {
	http.ResponseWriter
	end  func()
	once sync.Once
}

func (w *hijackWatch) ended() { w.once.Do(w.end) }

func (w *hijackWatch) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("not a hijacker")
	}
	defer w.ended()
	return hj.Hijack()
}

// connecting counts the clients between the start of a dial and the
// welcome that ends it (a failed attempt keeps the client counted until
// its next welcome): the handshakes the fleet has in flight, including
// the time they queue at the server, which handshakeCounter cannot see.
type connecting struct {
	mu        sync.Mutex
	in        []bool
	n, peak   int
	recording bool
}

func (c *connecting) dialing(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.in[i] {
		c.in[i] = true
		c.n++
		if c.recording {
			c.peak = max(c.peak, c.n)
		}
	}
}

func (c *connecting) online(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.in[i] {
		c.in[i] = false
		c.n--
	}
}

func (c *connecting) record(on bool) (peak int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.peak = c.n
	}
	c.recording = on
	return c.peak
}

// onlineLog is a client's log handler: it reports each "cloud link
// online" (the link got welcome) with its time.
type onlineLog struct {
	i    int
	ch   chan<- onlineAt
	conn *connecting
}

type onlineAt struct {
	i  int
	at time.Time
}

func (h onlineLog) Enabled(_ context.Context, l slog.Level) bool { return l == slog.LevelInfo }
func (h onlineLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cloud link online" {
		h.conn.online(h.i)
		select { // never block the link; the buffer holds 4 per client
		case h.ch <- onlineAt{h.i, time.Now()}:
		default:
		}
	}
	return nil
}
func (h onlineLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onlineLog) WithGroup(string) slog.Handler      { return h }

// stormFleet is how many clients BenchmarkReconnectStorm runs: 1,000, or
// fewer if RLIMIT_NOFILE cannot be raised to fit both ends of each
// connection.
func stormFleet(b *testing.B) int {
	const want = 1000
	need := uint64(2*want + 256)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur < need {
		lim.Cur = min(need, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			b.Logf("cannot raise RLIMIT_NOFILE: %v", err)
			syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
	}
	if lim.Cur >= need {
		return want
	}
	n := int((lim.Cur - 256) / 2)
	b.Logf("RLIMIT_NOFILE %d: the fleet is scaled down to %d clients", lim.Cur, n)
	return n
}

// BenchmarkReconnectStorm runs a fleet of links against one cloud, all
// connected, then drops every connection at once (cloudtest DropAll, a
// cloud restart) and measures each client's reconnect time (from just
// before DropAll to the client's welcome) and the peak number of upgrade
// requests in flight at the server. base=1s is the default backoff;
// base=1us is the same fleet with the jitter window shrunk to nothing, the
// thundering herd the jitter is there to avoid.
func BenchmarkReconnectStorm(b *testing.B) {
	fleet := stormFleet(b)
	for _, base := range []time.Duration{DefaultBackoffBase, time.Microsecond} {
		b.Run("base="+strings.ReplaceAll(base.String(), "µ", "u"), func(b *testing.B) {
			var p50, p90, pmax, peak, win, connecting float64
			for i := 0; i < b.N; i++ {
				r := stormOnce(b, fleet, base)
				p50 += r.p50
				p90 += r.p90
				pmax += r.max
				peak += r.peak
				win += r.window
				connecting += r.connecting
			}
			n := float64(b.N)
			b.ReportMetric(float64(fleet), "clients")
			b.ReportMetric(p50/n, "reconnect-p50-ms")
			b.ReportMetric(p90/n, "reconnect-p90-ms")
			b.ReportMetric(pmax/n, "reconnect-max-ms")
			b.ReportMetric(peak/n, "peak-handshakes")
			b.ReportMetric(peak/n/float64(fleet)*100, "peak-%fleet")
			b.ReportMetric(win/n/float64(fleet)*100, "max-arrivals-10ms-%fleet")
			b.ReportMetric(connecting/n/float64(fleet)*100, "peak-connecting-%fleet")
		})
	}
}

type stormResult struct {
	p50, p90, max float64 // reconnect times, ms
	peak          float64 // upgrade requests in flight at once
	connecting    float64 // clients between dial and welcome at once
	window        float64 // most upgrade requests arriving within 10 ms
}

func stormOnce(b *testing.B, fleet int, base time.Duration) stormResult {
	b.StopTimer()
	counter := &handshakeCounter{}
	c := newBenchCloud(func(h http.Handler) http.Handler {
		counter.next = h
		return counter
	})
	defer c.close()

	ctx, cancel := context.WithTimeout(context.Background(), benchBound)
	defer cancel()
	online := make(chan onlineAt, 4*fleet)
	conn := &connecting{in: make([]bool, fleet)}
	var runs sync.WaitGroup
	defer func() {
		cancel()
		runs.Wait()
	}()
	for i := range fleet {
		opts := benchOptions(c, fmt.Sprintf("agent-%04d", i), emptyOutbox{}, onlineLog{i, online, conn})
		opts.BackoffBase = base
		var nd net.Dialer
		opts.Dialer.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn.dialing(i)
			return nd.DialContext(ctx, network, addr)
		}
		l, err := New(opts)
		if err != nil {
			b.Fatal(err)
		}
		runs.Go(func() { l.Run(ctx) })
	}
	// Everyone connected once.
	first := make([]bool, fleet)
	for left := fleet; left > 0; {
		select {
		case o := <-online:
			if !first[o.i] {
				first[o.i] = true
				left--
			}
		case <-ctx.Done():
			b.Fatalf("%d of %d clients never connected", left, fleet)
		}
	}

	b.StartTimer()
	counter.reset()
	conn.record(true)
	t0 := time.Now()
	dropped := c.cloud.DropAll()
	dropTook := time.Since(t0)
	if dropped != fleet {
		b.Logf("DropAll dropped %d connections, fleet %d", dropped, fleet)
	}
	took := make([]time.Duration, fleet)
	back := make([]bool, fleet)
	for left := fleet; left > 0; {
		select {
		case o := <-online:
			if !back[o.i] {
				back[o.i] = true
				took[o.i] = o.at.Sub(t0)
				left--
			}
		case <-ctx.Done():
			b.Fatalf("%d of %d clients did not reconnect", left, fleet)
		}
	}
	b.StopTimer()
	counter.recording.Store(false)
	peakConnecting := conn.record(false)

	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r := stormResult{
		p50:  ms(took[len(took)/2]),
		p90:  ms(took[len(took)*9/10]),
		max:  ms(took[len(took)-1]),
		peak: float64(counter.peak.Load()),

		connecting: float64(peakConnecting),
	}
	counter.mu.Lock()
	arr := slices.Clone(counter.arrivals)
	counter.mu.Unlock()
	slices.SortFunc(arr, func(x, y time.Time) int { return x.Compare(y) })
	if len(arr) > 0 {
		b.Logf("DropAll returned after %v; upgrade requests arrived from %v to %v after it started; reconnects from %v",
			dropTook.Round(time.Millisecond), arr[0].Sub(t0).Round(time.Millisecond), arr[len(arr)-1].Sub(t0).Round(time.Millisecond), took[0].Round(time.Millisecond))
	}
	for i, j := 0, 0; j < len(arr); j++ {
		for arr[j].Sub(arr[i]) >= 10*time.Millisecond {
			i++
		}
		r.window = max(r.window, float64(j-i+1))
	}
	b.StartTimer()
	return r
}
