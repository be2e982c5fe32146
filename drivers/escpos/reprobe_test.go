package escpos_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// fakeClock is a hand-advanced clock for DeviceOptions.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// noTimer is an AfterFunc that never fires: idle closing is not under test.
func noTimer(time.Duration, func()) func() bool { return func() bool { return true } }

// printWant prints job and fails the test unless it is confirmed at want.
func printWant(t *testing.T, d *escpos.Device, text string, id uint64, want escpos.Confirmation) {
	t.Helper()
	c, err := d.Print(ctxFor(t, 20*time.Second), ticketJob(text), id)
	if err != nil || c != want {
		t.Fatalf("%s: confirmation %v (err %v), want %v", text, c, err, want)
	}
}

// dropConnection makes the printer drop the device's connection and waits
// until it is gone.
func dropConnection(t *testing.T, p *printertest.Printer) {
	t.Helper()
	if err := p.SetFault(printertest.FaultDrop, true); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitConnections(ctxFor(t, 10*time.Second), 0); err != nil {
		t.Fatal(err)
	}
}

// TestReprobeOnReconnect ensures a reconnect after the connection was lost
// probes the printer again once the last probe is a minute old (by the
// injected clock): a first probe that missed one slow GS ( H answer weakens
// the printer's jobs to "consumed" only until such a reconnect, not for the
// life of the process; and a link that keeps dropping does not pay a probe
// per reconnect.
func TestReprobeOnReconnect(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelEpson})
	clock := newFakeClock()
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{
		Session: testSession, IdleTimeout: -1, Now: clock.Now, AfterFunc: noTimer,
	})
	t.Cleanup(func() { d.Close() })
	p.HoldProcessID(1)
	printWant(t, d, "one", 1, escpos.ConfirmConsumed)
	// The same connection keeps what it probed.
	printWant(t, d, "two", 2, escpos.ConfirmConsumed)
	// A reconnect right after the probe does not probe again.
	clock.Advance(59 * time.Second)
	dropConnection(t, p)
	printWant(t, d, "three", 3, escpos.ConfirmConsumed)
	clock.Advance(time.Second)
	dropConnection(t, p)
	printWant(t, d, "four", 4, escpos.ConfirmPrinted)
	if caps, ok := d.Capabilities(); !ok || !caps.ProcessID {
		t.Fatalf("capabilities after reconnect %+v (known %v), want GS ( H", caps, ok)
	}
}

// TestReprobeAfterIdle ensures the capabilities are probed again after the
// default 10 minutes without a print (on the injected clock), and not
// while work flows, even on a connection that stays open.
func TestReprobeAfterIdle(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelEpson})
	clock := newFakeClock()
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{
		Session: testSession, IdleTimeout: -1, Now: clock.Now, AfterFunc: noTimer,
	})
	t.Cleanup(func() { d.Close() })
	p.HoldProcessID(1)
	printWant(t, d, "one", 1, escpos.ConfirmConsumed)
	clock.Advance(9 * time.Minute)
	printWant(t, d, "two", 2, escpos.ConfirmConsumed)
	clock.Advance(10 * time.Minute)
	printWant(t, d, "three", 3, escpos.ConfirmPrinted)
	if !d.Connected() {
		t.Fatal("the idle re-probe closed the connection; it should reuse it")
	}
}

// downgrade is one OnDowngrade call.
type downgrade struct {
	from, to escpos.Confirmation
	why      string
}

// downgrades records OnDowngrade calls.
type downgrades struct {
	mu    sync.Mutex
	calls []downgrade
}

func (r *downgrades) hook(from, to escpos.Confirmation, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, downgrade{from, to, why})
}

func (r *downgrades) get() []downgrade {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]downgrade(nil), r.calls...)
}

// TestSlowProcessIDDowngradesOneJob ensures one slow GS ( H answer, in the
// probe after a reconnect, weakens that one job to "consumed" and is
// reported once with the levels; the next job probes again and is
// "printed"; and the late answer, when it finally comes, is not taken for
// any job's.
func TestSlowProcessIDDowngradesOneJob(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelEpson})
	var rec downgrades
	clock := newFakeClock()
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{
		Session: testSession, IdleTimeout: -1, OnDowngrade: rec.hook,
		Now: clock.Now, AfterFunc: noTimer,
	})
	t.Cleanup(func() { d.Close() })

	printWant(t, d, "one", 1, escpos.ConfirmPrinted)
	if got := rec.get(); len(got) != 0 {
		t.Fatalf("downgrades after a printed job: %+v", got)
	}
	p.HoldProcessID(1)
	clock.Advance(escpos.DefaultReprobeOnReconnect)
	dropConnection(t, p)
	printWant(t, d, "two", 2, escpos.ConfirmConsumed)
	got := rec.get()
	if len(got) != 1 || got[0].from != escpos.ConfirmPrinted || got[0].to != escpos.ConfirmConsumed {
		t.Fatalf("downgrades %+v, want one printed -> consumed", got)
	}
	if why := got[0].why; !strings.Contains(why, "GS ( H") || !strings.Contains(why, "connection was lost") {
		t.Errorf("why %q does not say which answer was missing and when", why)
	}
	printWant(t, d, "three", 3, escpos.ConfirmPrinted)
	if n := p.ReleaseProcessID(); n != 1 {
		t.Fatalf("the printer held %d answers, want the probe's 1", n)
	}
	printWant(t, d, "four", 4, escpos.ConfirmPrinted)
	if got := rec.get(); len(got) != 1 {
		t.Fatalf("downgrades %+v, want still the one", got)
	}
	tk, err := p.WaitTickets(ctxFor(t, 10*time.Second), 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []string{"one", "two", "three", "four"} {
		if !tk[i].Contains(w) {
			t.Fatalf("ticket %d %+v, want %q", i, tk[i], w)
		}
	}
}

// TestExpectedLevelFromProfile ensures a first probe weaker than the level
// the profile promises (DeviceOptions.Expected) is a downgrade: reported,
// and probed again on the next job, which is "printed".
func TestExpectedLevelFromProfile(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelEpson})
	var rec downgrades
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{
		Session: testSession, IdleTimeout: -1, OnDowngrade: rec.hook,
		Expected: escpos.AckProcessID.Confirmation(),
	})
	t.Cleanup(func() { d.Close() })
	p.HoldProcessID(1)
	printWant(t, d, "one", 1, escpos.ConfirmConsumed)
	if got := rec.get(); len(got) != 1 || got[0].from != escpos.ConfirmPrinted || got[0].to != escpos.ConfirmConsumed {
		t.Fatalf("downgrades %+v, want one printed -> consumed", got)
	} else if !strings.Contains(got[0].why, "profile promises printed") {
		t.Errorf("why %q does not say the profile promised more", got[0].why)
	}
	printWant(t, d, "two", 2, escpos.ConfirmPrinted)
	if got := rec.get(); len(got) != 1 {
		t.Fatalf("downgrades %+v, want one", got)
	}
}

// TestWeakerPrinterAcceptedAfterSecondProbe ensures a printer that really
// is weaker than expected (a clone configured with an Epson profile) is
// reported once and probed once more, and then its level is accepted: no
// probe on every job, no warning on every job.
func TestWeakerPrinterAcceptedAfterSecondProbe(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelClone})
	var rec downgrades
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{
		Session: testSession, IdleTimeout: -1, OnDowngrade: rec.hook,
		Expected: escpos.ConfirmPrinted,
	})
	t.Cleanup(func() { d.Close() })
	printWant(t, d, "one", 1, escpos.ConfirmConsumed)
	printWant(t, d, "two", 2, escpos.ConfirmConsumed)
	before := p.Received()
	job := ticketJob("three")
	printWant(t, d, "three", 3, escpos.ConfirmConsumed)
	// Health check, job, GS r 1, DLE EOT 2 and 3: no probe.
	if got, want := p.Received()-before, int64(healthCheckBytes+len(job)+3+6); got != want {
		t.Fatalf("third job sent %d bytes, want %d (no probe once the level is accepted)", got, want)
	}
	if got := rec.get(); len(got) != 1 || got[0].from != escpos.ConfirmPrinted || got[0].to != escpos.ConfirmConsumed {
		t.Fatalf("downgrades %+v, want exactly one printed -> consumed", got)
	}
}
