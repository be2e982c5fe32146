package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/agent/rawport"
	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/internal/warnlimit"
	"printgate/spool"
)

// TestBucket ensures a door's bucket takes its burst at once, then one task
// per 1/rate, and says how long until the next.
func TestBucket(t *testing.T) {
	b := &bucket{rate: 2, burst: 3}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if _, ok := b.take(now); !ok {
			t.Fatalf("burst token %d refused", i)
		}
	}
	wait, ok := b.take(now)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("past the burst: ok=%v wait=%v, want a refusal for 500ms", ok, wait)
	}
	if _, ok := b.take(now.Add(499 * time.Millisecond)); ok {
		t.Fatal("a token before 1/rate passed")
	}
	if _, ok := b.take(now.Add(500 * time.Millisecond)); !ok {
		t.Fatal("no token after 1/rate")
	}
	// Idle for long: the bucket fills to its burst, never more.
	later := now.Add(time.Hour)
	for i := range 3 {
		if _, ok := b.take(later); !ok {
			t.Fatalf("refilled token %d refused", i)
		}
	}
	if _, ok := b.take(later); ok {
		t.Fatal("the bucket held more than its burst")
	}
}

// logBuffer is a logger whose lines a test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// withRates restarts h's agent with the doors' rates set, on its logger.
func withRates(h *harness, rates map[string]float64, logs *logBuffer) {
	h.stop()
	h.cfg.Spool.Rate = rates
	h.start(func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
}

// TestAPIRateRefusesThenRefills ensures the LAN API's door refuses a task
// past its burst with an *api.RateLimited (ErrRateLimited, ErrUnavailable:
// nothing taken) that names rate_api and the wait, that a duplicate is
// still answered, that the rate refills on the clock, and that the health
// report names the door for a minute after its last trip.
func TestAPIRateRefusesThenRefills(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	logs := &logBuffer{}
	withRates(h, map[string]float64{config.DoorAPI: 1}, logs) // a burst of 10
	for i := range 10 {
		h.submit("R"+string(rune('A'+i)), "k")
	}
	_, _, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "OVER", Printer: "k", Document: []byte(`{"lines":[{"text":"x"}]}`)})
	var rl *api.RateLimited
	if !errors.As(err, &rl) || !errors.Is(err, api.ErrRateLimited) || !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("past the burst: %v, want an api.RateLimited", err)
	}
	if rl.Door != "api" || rl.Key != "rate_api" || rl.RetryAfter <= 0 || rl.RetryAfter > time.Second {
		t.Fatalf("refusal %+v", rl)
	}
	if _, err := h.sp.Get("OVER"); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("a task refused for the rate is in the spool: %v", err)
	}
	// A resend of a task already taken is its duplicate, rate or not.
	if _, dup, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "RA", Printer: "k", Document: []byte(`{"lines":[{"text":"TICKET RA"},{"cut":"partial"}]}`)}); err != nil || !dup {
		t.Fatalf("duplicate past the rate: dup=%v err=%v", dup, err)
	}
	// Another door has its own bucket (none here).
	h.submit("CLOUD1", "k", func(nt *spool.NewTask) { nt.Origin = spool.OriginCloud })
	if hl := h.a.Health(); hl.Status != "degraded" || !strings.Contains(hl.Error, "rate_api") {
		t.Fatalf("health after the trip: %+v", hl)
	}
	if !strings.Contains(logs.String(), "INTAKE RATE LIMIT") || !strings.Contains(logs.String(), "rate_api") {
		t.Fatalf("no WARN naming rate_api:\n%s", logs)
	}
	h.clock.Advance(rl.RetryAfter)
	h.submit("OVER", "k")
	h.clock.Advance(rateWindow)
	if hl := h.a.Health(); hl.Status != "ok" {
		t.Fatalf("health a minute after the last trip: %+v", hl)
	}
}

// TestRawRateWaits ensures a raw job over the raw door's rate waits for its
// token on the clock instead of being refused (docs/DESIGN.md, invariant 8), and
// gives up only when the port closes.
func TestRawRateWaits(t *testing.T) {
	clk := clock.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	d := newDoors(config.Spool{Rate: map[string]float64{config.DoorRaw: 0.1}}, clk, slog.New(slog.NewTextHandler(&logBuffer{}, nil)))
	if err := d.wait(context.Background(), spool.OriginRaw); err != nil { // the burst of 1
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.wait(context.Background(), spool.OriginRaw) }()
	waitArmed(t, clk, done)
	clk.Advance(10 * time.Second)
	if err := <-done; err != nil {
		t.Fatalf("the raw job waited and then: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- d.wait(ctx, spool.OriginRaw) }()
	waitArmed(t, clk, done)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait on a closing port ended with %v", err)
	}
}

// waitArmed waits until the raw job's wait arms its timer on clk, and
// fails the test if the wait ended instead.
func waitArmed(t *testing.T, clk *clock.FakeClock, done <-chan error) {
	t.Helper()
	for clk.Armed() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the raw job did not wait: %v", err)
		default:
			runtime.Gosched()
		}
	}
}

// TestRawQuotaRefusesOnlyRaw ensures the raw door past its quota is refused,
// first by the port's Ready (the POS's connection is reset before it sends
// a job) and by Accept for a job already read, with a rate-limited WARN
// naming quota_raw and the health report's alert, while the LAN API still
// gets in; and that the alert ends when a raw job gets in again.
func TestRawQuotaRefusesOnlyRaw(t *testing.T) {
	const quota = 3 << 20 // the largest job's charge, 1.33 MiB, fits twice
	clk := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), spool.Options{Retention: time.Hour, Quotas: map[spool.Origin]int64{spool.OriginRaw: quota}}, clk,
		[]printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	logs := &logBuffer{}
	withRates(h, nil, logs)
	sink := rawSink{h.a}
	job := func(n int) rawport.Job {
		return rawport.Job{Printer: "k", Data: bytes.Repeat([]byte("RAW JOB LINE\n"), n/13), Started: clk.Now(), Ended: clk.Now()}
	}
	if err := sink.Ready("k"); err != nil {
		t.Fatalf("ready with an empty quota: %v", err)
	}
	var taken []string
	for i := 0; ; i++ {
		no, err := sink.Accept(context.Background(), job(256<<10))
		if err != nil {
			if !errors.Is(err, spool.ErrFull) || !strings.Contains(err.Error(), "quota_raw") {
				t.Fatalf("raw job past the quota: %v, want ErrFull naming quota_raw", err)
			}
			break
		}
		taken = append(taken, no)
		if i > 20 {
			t.Fatal("the raw quota never filled")
		}
	}
	if err := sink.Ready("k"); !errors.Is(err, spool.ErrFull) {
		t.Fatalf("ready past the quota: %v, want ErrFull", err)
	}
	for range 20 {
		sink.Ready("k")
	}
	if n := strings.Count(logs.String(), "SPOOL QUOTA REACHED"); n > warnlimit.PerMinute {
		t.Errorf("%d WARN lines for 21 readiness checks past the quota; want at most %d a minute (a raw port asks twice a second)", n, warnlimit.PerMinute)
	}
	if !strings.Contains(logs.String(), "SPOOL QUOTA REACHED") || !strings.Contains(logs.String(), "quota_raw") {
		t.Errorf("no WARN naming the raw door's quota:\n%s", logs)
	}
	if hl := h.a.Health(); hl.Status != "degraded" || !strings.Contains(hl.Error, "quota_raw") || !strings.Contains(hl.Error, "raw door") {
		t.Fatalf("health past the raw quota: %+v", hl)
	}
	h.waitFor("a health event for the page's alert", func(e Event) bool { return e.Health })
	h.submit("API1", "k") // the LAN API still gets in
	// The raw tasks print, age out and give their share back.
	for _, no := range taken {
		h.waitUntil(no+" printed", func() bool { return h.inState(spool.StatePrinted, no) })
	}
	h.waitUntil("API1 printed", func() bool { return h.inState(spool.StatePrinted, "API1") })
	clk.Advance(2 * time.Hour)
	if _, err := h.sp.Prune(clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := sink.Ready("k"); err != nil {
		t.Fatalf("ready once the raw tasks aged out: %v", err)
	}
	if _, err := sink.Accept(context.Background(), job(1000)); err != nil {
		t.Fatal(err)
	}
	if hl := h.a.Health(); hl.Status != "ok" {
		t.Fatalf("health once a raw job got in again: %+v", hl)
	}
}

// TestDoorWarningsSummarised ensures a flood of refusals logs a few WARN
// lines a minute and then one summary with the count.
func TestDoorWarningsSummarised(t *testing.T) {
	clk := clock.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	logs := &logBuffer{}
	d := newDoors(config.Spool{Quota: config.DefaultQuotas()}, clk, slog.New(slog.NewTextHandler(logs, nil)))
	qe := &spool.QuotaError{Origin: spool.OriginRaw, Used: 10, Quota: 10, Need: 1}
	if !d.refused(qe) {
		t.Fatal("the first quota refusal did not change the health report")
	}
	for range 99 {
		if d.refused(qe) {
			t.Fatal("a repeated quota refusal changed the health report")
		}
	}
	if n := strings.Count(logs.String(), "SPOOL QUOTA REACHED"); n != warnlimit.PerMinute {
		t.Fatalf("%d WARN lines for 100 refusals in a minute, want %d", n, warnlimit.PerMinute)
	}
	clk.Advance(time.Minute)
	d.refused(qe)
	if !strings.Contains(logs.String(), "suppressed=95") {
		t.Fatalf("no summary of the 95 suppressed lines:\n%s", logs)
	}
	if !strings.Contains(d.problem(), "quota_raw") {
		t.Fatalf("problem %q", d.problem())
	}
	if !d.accepted(spool.OriginRaw) || d.problem() != "" {
		t.Fatalf("a raw task got in and the problem stays: %q", d.problem())
	}
}

// TestQuotaRefusalSpendsNoRate ensures a task the spool refuses for its
// door's quota gives its rate token back: a door refused for its quota
// while its printer is out of paper is not then refused for its rate once
// the quota has room again (its printed tickets make room, spool reclaim).
func TestQuotaRefusalSpendsNoRate(t *testing.T) {
	body := []byte(strings.Repeat("x", 8<<10))
	quota := 2 * spool.Charge(len(body))
	clk := clock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), spool.Options{Quotas: map[spool.Origin]int64{spool.OriginLocal: quota}}, clk,
		[]printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}}}, "")
	withRates(h, map[string]float64{config.DoorAPI: 1}, &logBuffer{}) // a burst of 10
	payload := func(nt *spool.NewTask) { nt.Document, nt.Payload = nil, body }
	h.submit("Q1", "k", payload)
	h.submit("Q2", "k", payload)
	for i := range 8 {
		_, _, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: fmt.Sprintf("OVER%d", i), Printer: "k", Payload: body})
		var qe *spool.QuotaError
		if !errors.As(err, &qe) {
			t.Fatalf("submit %d past the quota: %v, want a QuotaError", i, err)
		}
	}
	// Paper back: the two print and their bodies make room. No time
	// passed, so only the 8 tokens the quota refusals gave back are left.
	if err := h.p["k"].SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	// The idle poll runs on the fake clock, which stands still: the lane
	// hears of the paper through Refresh, as after a poll.
	h.a.Refresh("k")
	h.waitUntil("Q1 and Q2 printed", func() bool { return h.inState(spool.StatePrinted, "Q1", "Q2") })
	h.submit("AFTER", "k", payload)
}
