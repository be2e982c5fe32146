package link

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/internal/backoff"
	"printgate/internal/warnlimit"
	"printgate/spool"
	"printgate/sync/wire"
)

// TestNewRefusesPlainTextToOtherHosts ensures ws:// (no TLS) is accepted
// only to a loopback host, and that a dialer skipping verification is
// refused.
func TestNewRefusesPlainTextToOtherHosts(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"wss://cloud.example.com/agent", true},
		{"ws://127.0.0.1:8080/agent", true},
		{"ws://[::1]:8080/agent", true},
		{"ws://localhost/agent", true},
		{"ws://cloud.example.com/agent", false},
		{"ws://10.0.0.5/agent", false},
		{"ws://127.0.0.1.example.com/agent", false},
		{"http://127.0.0.1/agent", false},
		{"https://cloud.example.com/agent", false},
		{"wss://user:pw@cloud.example.com/agent", false},
		{"", false},
	} {
		o := h.options()
		o.URL = c.url
		_, err := New(o)
		if (err == nil) != c.ok {
			t.Errorf("New(%q): err %v, want ok=%v", c.url, err, c.ok)
		}
	}
	o := h.options()
	o.URL = "wss://cloud.example.com/agent"
	o.Dialer = &websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	if _, err := New(o); err == nil {
		t.Error("New accepted a dialer that skips TLS verification")
	}
}

// TestHelloWelcome ensures the handshake carries the token, agent id and
// subprotocol, that hello names the agent, its printers and the outbox
// depth, and that the link is online once welcomed.
func TestHelloWelcome(t *testing.T) {
	h := newHarness(t)
	h.accept(t, "A_v1")
	h.accept(t, "B_v1")
	h.start(t, h.options())
	p, hello := h.cloud.welcome(t) // the fake cloud refuses a wrong token or agent header
	if p.ws.Subprotocol() != wire.Subprotocol {
		t.Errorf("subprotocol %q", p.ws.Subprotocol())
	}
	if hello.AgentID != testAgent || hello.Version != "1.2.3" || hello.Outbox != 2 ||
		fmt.Sprint(hello.Printers) != "[{kitchen READY} {bar OFFLINE}]" {
		t.Errorf("hello %+v", hello)
	}
	expect[*wire.Events](t, p) // the pump starts once welcomed
	p.barrier(t)
	if got := h.link.State(); got != StateOnline {
		t.Errorf("state %q after welcome, want online", got)
	}
	if st := h.link.Stats(); st.Connects != 1 || st.Dials != 1 || st.InFlight != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestWelcomeTimeout ensures a cloud that never answers hello is dropped
// after WelcomeTimeout on the link's clock.
func TestWelcomeTimeout(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p := h.cloud.accept(t)
	expect[*wire.Hello](t, p)
	now := h.clock.Now()
	if due := h.clock.WaitTimer(now.Add(DefaultWelcomeTimeout)); due.Sub(now) != DefaultWelcomeTimeout {
		t.Fatalf("welcome timer due in %v", due.Sub(now))
	}
	h.clock.Advance(DefaultWelcomeTimeout)
	p.closed(t)
	if h.link.State() == StateOnline {
		t.Error("online without a welcome")
	}
}

func job(taskNo string) *wire.Job {
	return &wire.Job{TaskNo: taskNo, Printer: "kitchen", Priority: spool.PriorityUrgent,
		Payload: []byte("\x1b@hello\n"), Timeout: "45s"}
}

// TestJobAckAfterSubmit ensures a job is acknowledged only after Submit
// returned, with the task on disk as the cloud sent it (origin cloud,
// priority, timeout).
func TestJobAckAfterSubmit(t *testing.T) {
	h := newHarness(t)
	gate, entered := make(chan struct{}), make(chan string, 1)
	h.be.set(func(b *backend) { b.gate, b.entered = gate, entered })
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.send(t, job("ORD-1_KITCHEN_v1"))
	<-entered
	// Submit is running. A frame the reader answers at once goes out
	// now; a job_ack sent before Submit returned would be ahead of it.
	p.sendRaw(t, `{"type":"nonsense"}`)
	if e := expect[*wire.Error](t, p); e.Code != wire.CodeUnknownType {
		t.Fatalf("error %+v", e)
	}
	close(gate)
	ack := expect[*wire.JobAck](t, p)
	if ack.TaskNo != "ORD-1_KITCHEN_v1" || ack.Result != wire.ResultAccepted || ack.State != spool.StateAccepted {
		t.Fatalf("ack %+v", ack)
	}
	task, err := h.sp.Get("ORD-1_KITCHEN_v1")
	if err != nil {
		t.Fatal(err)
	}
	if task.Origin != spool.OriginCloud || task.Priority != spool.PriorityUrgent ||
		task.Deadline.Sub(task.AcceptedAt) != 45*time.Second || string(task.Payload) != "\x1b@hello\n" {
		t.Errorf("task %+v", task)
	}
}

// TestJobDuplicate ensures a job sent again is answered duplicate with the
// task's current state, and not accepted twice.
func TestJobDuplicate(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.send(t, job("ORD-2_KITCHEN_v1"))
	if ack := expect[*wire.JobAck](t, p); ack.Result != wire.ResultAccepted {
		t.Fatalf("first ack %+v", ack)
	}
	cur, _ := h.sp.Get("ORD-2_KITCHEN_v1")
	if _, err := h.sp.Transition(cur.TaskNo, cur.State, spool.StateQueued, spool.Change{}); err != nil {
		t.Fatal(err)
	}
	p.send(t, job("ORD-2_KITCHEN_v1"))
	ack := expect[*wire.JobAck](t, p)
	if ack.Result != wire.ResultDuplicate || ack.State != spool.StateQueued || ack.Error != nil {
		t.Fatalf("second ack %+v", ack)
	}
}

// TestKnownJobIsDuplicateFirst ensures a resend of a task_no the agent
// knows is answered duplicate with the task's state, whatever the link
// would refuse in it now: a timeout out of range or unreadable, a frame
// Decode refuses (docs/DESIGN.md, invariant 7). Only a frame whose task_no
// cannot be read is still refused outright.
func TestKnownJobIsDuplicateFirst(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.send(t, job("K1_v1"))
	if ack := expect[*wire.JobAck](t, p); ack.Result != wire.ResultAccepted {
		t.Fatalf("first ack %+v", ack)
	}
	for _, timeout := range []string{"48h", "soon", "1ms"} {
		j := job("K1_v1")
		j.Timeout = timeout
		p.send(t, j)
		if ack := expect[*wire.JobAck](t, p); ack.Result != wire.ResultDuplicate || ack.State != spool.StateAccepted || ack.Error != nil {
			t.Errorf("resend with timeout %q: ack %+v (error %+v), want duplicate ACCEPTED", timeout, ack, ack.Error)
		}
	}
	for _, frame := range []string{
		`{"type":"job","task_no":"K1_v1","printer":"kitchen","payload":"%%%"}`,
		`{"type":"job","task_no":"K1_v1","printer":"kitchen","payload":"eA==","colour":"red"}`,
		`{"type":"job","task_no":"K1_v1","printer":"kitchen"}`,
		`{"type":"job","task_no":"K1_v1","printer":"kitchen","document":"text"}`,
	} {
		p.sendRaw(t, frame)
		if ack := expect[*wire.JobAck](t, p); ack.TaskNo != "K1_v1" || ack.Result != wire.ResultDuplicate || ack.State != spool.StateAccepted || ack.Error != nil {
			t.Errorf("%s: ack %+v (error %+v), want duplicate ACCEPTED", frame, ack, ack.Error)
		}
	}
	// A new task_no in a broken frame is still rejected, in its terms.
	p.sendRaw(t, `{"type":"job","task_no":"K2_v1","printer":"kitchen","payload":"%%%"}`)
	if ack := expect[*wire.JobAck](t, p); ack.Result != wire.ResultRejected || ack.Error == nil || ack.Error.Code != "bad_payload" {
		t.Errorf("new broken job: ack %+v (error %+v), want rejected bad_payload", ack, ack.Error)
	}
	if _, err := h.sp.Get("K2_v1"); err == nil {
		t.Error("rejected job K2_v1 is in the spool")
	}
}

// TestJobRejected ensures a job the agent refuses is answered rejected
// with the code Classify gives (or bad_timeout for a timeout the link
// cannot read), and is not spooled.
func TestJobRejected(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	for _, c := range []struct {
		job  *wire.Job
		code string
	}{
		{&wire.Job{TaskNo: "R1_v1", Printer: "garage", Payload: []byte("x")}, "unknown_printer"},
		{&wire.Job{TaskNo: "R2_v1", Printer: "kitchen", Payload: []byte("x"), Timeout: "soon"}, "bad_timeout"},
		{&wire.Job{TaskNo: "R3_v1", Printer: "kitchen", Payload: []byte("x"), Timeout: "48h"}, "bad_timeout"},
		{&wire.Job{TaskNo: "bad task no", Printer: "kitchen", Payload: []byte("x")}, "invalid_task"},
	} {
		p.send(t, c.job)
		ack := expect[*wire.JobAck](t, p)
		if ack.TaskNo != c.job.TaskNo || ack.Result != wire.ResultRejected || ack.Error == nil || ack.Error.Code != c.code || ack.State != "" {
			t.Errorf("job %+v: ack %+v (error %+v), want rejected %s", c.job, ack, ack.Error, c.code)
		}
		if _, err := h.sp.Get(c.job.TaskNo); err == nil {
			t.Errorf("rejected job %s is in the spool", c.job.TaskNo)
		}
	}
}

// TestJobRetryNotAcked ensures a job the agent cannot take for now
// (Classify says retry) gets no job_ack at all, so the cloud resends it,
// and that the resend is accepted once the agent can.
func TestJobRetryNotAcked(t *testing.T) {
	h := newHarness(t)
	h.be.set(func(b *backend) { b.fail = errUnavailable })
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.send(t, job("ORD-3_KITCHEN_v1"))
	// Jobs and commands are handled in order: the cancel's answer comes
	// after whatever the job got.
	p.send(t, &wire.Cancel{ID: "c1", TaskNo: "NOPE_v1"})
	if r := expect[*wire.CommandResult](t, p); r.ID != "c1" || r.OK || r.Error.Code != "not_found" {
		t.Fatalf("result %+v", r)
	}
	h.be.set(func(b *backend) { b.fail = nil })
	p.send(t, job("ORD-3_KITCHEN_v1"))
	if ack := expect[*wire.JobAck](t, p); ack.Result != wire.ResultAccepted {
		t.Fatalf("resent job: %+v", ack)
	}
}

// TestMalformedFrames ensures a frame the link cannot decode is answered
// (job_ack rejected for a job whose task_no is readable, else an error
// frame) and the connection stays up.
func TestMalformedFrames(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	for _, c := range []struct{ frame, code string }{
		{`{"type":"job","task_no":"M1_v1","printer":"kitchen","payload":"%%%"}`, "bad_payload"},
		{`{"type":"job","task_no":"M2_v1","printer":"kitchen","payload":"eA==","colour":"red"}`, "unknown_field"},
		{`{"type":"job","task_no":"M3_v1","printer":"kitchen"}`, "invalid_task"},
	} {
		p.sendRaw(t, c.frame)
		ack := expect[*wire.JobAck](t, p)
		if ack.Result != wire.ResultRejected || ack.Error.Code != c.code {
			t.Errorf("%s: ack %+v %+v, want rejected %s", c.frame, ack, ack.Error, c.code)
		}
	}
	for _, c := range []struct{ frame, code string }{
		{`{"type":"job","printer":"kitchen","payload":"eA=="}`, wire.CodeInvalid},
		{`not json`, wire.CodeBadJSON},
		{`{"type":"reprint","id":"x"}`, wire.CodeInvalid},
		{`{"type":"teleport"}`, wire.CodeUnknownType},
	} {
		p.sendRaw(t, c.frame)
		if e := expect[*wire.Error](t, p); e.Code != c.code {
			t.Errorf("%s: error %+v, want %s", c.frame, e, c.code)
		}
	}
	p.send(t, job("OK_v1"))
	if ack := expect[*wire.JobAck](t, p); ack.Result != wire.ResultAccepted {
		t.Fatalf("after malformed frames: %+v", ack)
	}
	if d := h.cloud.dials.Load(); d != 1 {
		t.Errorf("%d dials; a malformed frame must not drop the connection", d)
	}
}

func keysOf(evs []wire.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%s/%d", e.TaskNo, e.N)
	}
	return out
}

// TestOutboxPump ensures events go out in task_no then n order, at most
// MaxInFlight batches unacknowledged, leave the outbox only when
// acknowledged, and that after a reconnect every unacknowledged event is
// sent again.
func TestOutboxPump(t *testing.T) {
	h := newHarness(t)
	// Written out of task_no order, and a task with two events.
	for _, no := range []string{"T09", "T05", "T01", "T07", "T03", "T02", "T08", "T04", "T06"} {
		h.accept(t, no)
	}
	if _, err := h.sp.Transition("T01", spool.StateAccepted, spool.StateQueued, spool.Change{}); err != nil {
		t.Fatal(err)
	}
	o := h.options()
	o.MaxInFlight, o.BatchSize = 2, 3
	h.start(t, o)
	p, hello := h.cloud.welcome(t)
	if hello.Outbox != 10 {
		t.Fatalf("hello outbox %d, want 10", hello.Outbox)
	}
	b1, b2 := expect[*wire.Events](t, p), expect[*wire.Events](t, p)
	if more := p.barrier(t); len(more) != 0 {
		t.Fatalf("with 2 batches in flight the agent sent %d more frames (first %s); MaxInFlight is 2", len(more), more[0].Type())
	}
	got := append(keysOf(b1.Events), keysOf(b2.Events)...)
	if want := "[T01/1 T01/2 T02/1 T03/1 T04/1 T05/1]"; fmt.Sprint(got) != want {
		t.Fatalf("first batches %v, want %v", got, want)
	}
	for _, b := range []*wire.Events{b1, b2} {
		if err := b.Ordered(); err != nil {
			t.Error(err)
		}
	}
	if b1.Batch == b2.Batch {
		t.Errorf("two batches share id %q", b1.Batch)
	}

	// An event written behind the batches in flight (T01 sorts before
	// them) is sent with the next batch, not lost behind the cursor.
	if _, err := h.sp.Transition("T01", spool.StateQueued, spool.StateSending, spool.Change{}); err != nil {
		t.Fatal(err)
	}
	p.send(t, &wire.EventsAck{Batch: b1.Batch})
	b3 := expect[*wire.Events](t, p)
	if more := p.barrier(t); len(more) != 0 {
		t.Fatalf("one ack freed one slot, but the agent sent %d more frames", len(more))
	}
	if got, want := fmt.Sprint(keysOf(b3.Events)), "[T01/3 T06/1 T07/1]"; got != want {
		t.Fatalf("third batch %v, want %v", got, want)
	}
	if d, _ := h.sp.OutboxDepth(); d != 11-3 {
		t.Errorf("outbox depth %d after acking 3 of 11, want 8", d)
	}
	if st := h.link.Stats(); st.InFlight != 2 {
		t.Errorf("stats in flight %d, want 2", st.InFlight)
	}

	// Acknowledge b3 only; b2 stays unacknowledged across a reconnect.
	p.send(t, &wire.EventsAck{Batch: b3.Batch})
	b4 := expect[*wire.Events](t, p)
	if got, want := fmt.Sprint(keysOf(b4.Events)), "[T08/1 T09/1]"; got != want {
		t.Fatalf("fourth batch %v, want %v", got, want)
	}
	p.barrier(t)
	p.ws.Close()
	h.reconnect(t)
	p2, hello2 := h.cloud.welcome(t)
	if hello2.Outbox != 5 {
		t.Errorf("hello after reconnect: outbox %d, want 5", hello2.Outbox)
	}
	r1, r2 := expect[*wire.Events](t, p2), expect[*wire.Events](t, p2)
	if got, want := fmt.Sprint(append(keysOf(r1.Events), keysOf(r2.Events)...)), "[T03/1 T04/1 T05/1 T08/1 T09/1]"; got != want {
		t.Fatalf("resent after reconnect %v, want %v (every unacknowledged event, from the start)", got, want)
	}
	if r1.Batch == b2.Batch || r1.Batch == b4.Batch {
		t.Errorf("batch id %q reused across connections", r1.Batch)
	}
	p2.send(t, &wire.EventsAck{Batch: r1.Batch})
	p2.send(t, &wire.EventsAck{Batch: r2.Batch})
	if more := p2.barrier(t); len(more) != 0 {
		t.Fatalf("nothing left to send, but the agent sent %v", more[0].Type())
	}
	if d, _ := h.sp.OutboxDepth(); d != 0 {
		t.Errorf("outbox depth %d after every ack", d)
	}
	if st := h.link.Stats(); st.LastSync.IsZero() || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestNotifyAndPoll ensures new events go out on Notify, and without it at
// the next poll.
func TestNotifyAndPoll(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.PollInterval = time.Second
	h.start(t, o)
	p, _ := h.cloud.welcome(t)
	p.barrier(t) // the connection's timers are armed
	h.accept(t, "N1")
	h.link.Notify()
	if b := expect[*wire.Events](t, p); fmt.Sprint(keysOf(b.Events)) != "[N1/1]" {
		t.Fatalf("after Notify: %v", keysOf(b.Events))
	}
	// The pump may still be looking for more after the batch went out:
	// let it finish before N2 exists.
	if more := p.barrier(t); len(more) != 0 {
		t.Fatalf("sent %s after the batch", more[0].Type())
	}
	h.accept(t, "N2")
	if more := p.barrier(t); len(more) != 0 {
		t.Fatalf("sent %s without Notify or poll", more[0].Type())
	}
	h.clock.Advance(time.Second)
	if b := expect[*wire.Events](t, p); fmt.Sprint(keysOf(b.Events)) != "[N2/1]" {
		t.Fatalf("after the poll: %v", keysOf(b.Events))
	}
}

// TestBackoffFullJitter ensures reconnects wait a full-jitter exponential
// delay (a uniform draw below min(cap, base·2ⁿ)) on the link's clock,
// capped at 60 s, and that the draws are the seeded ones.
func TestBackoffFullJitter(t *testing.T) {
	h := newHarness(t)
	h.cloud.set(func(c *cloud) { c.status = http.StatusServiceUnavailable })
	h.start(t, h.options())
	want := backoff.Backoff{Base: time.Second, Factor: 2, Cap: time.Minute, FullJitter: true,
		Rand: rand.New(rand.NewPCG(testSeed, testSeed^0x9e3779b97f4a7c15))}
	var sum time.Duration
	for i := range 12 {
		d := h.reconnect(t)
		bound := min(time.Minute, time.Second<<i)
		if d > bound || d < 0 {
			t.Fatalf("attempt %d waited %v, want within [0, %v]", i, d, bound)
		}
		if w := want.Delay(i); d != w {
			t.Fatalf("attempt %d waited %v, want the seeded full-jitter draw %v", i, d, w)
		}
		sum += d
	}
	<-h.logs.down // the 13th dial failed
	if n := h.cloud.dials.Load(); n != 13 {
		t.Errorf("%d dials, want 13", n)
	}
	if sum > 12*time.Minute || sum < time.Minute {
		t.Errorf("12 delays sum to %v", sum)
	}
	if st := h.link.Stats(); st.State != StateOffline || !strings.Contains(st.LastError, "503") {
		t.Errorf("stats %+v", st)
	}
}

// TestUnpairedNoStorm ensures a token the cloud refuses (401) makes the
// link unpaired: one ERROR, no more dials while the token stays the same,
// only a Token call every TokenRecheck; a new token connects.
func TestUnpairedNoStorm(t *testing.T) {
	h := newHarness(t)
	h.cloud.set(func(c *cloud) { c.token = "tok-2" })
	h.start(t, h.options())
	for range 10 { // five minutes
		now := h.clock.Now()
		due := h.clock.WaitTimer(now.Add(DefaultTokenRecheck))
		if due.Sub(now) != DefaultTokenRecheck {
			t.Fatalf("unpaired link waits %v, want %v", due.Sub(now), DefaultTokenRecheck)
		}
		h.clock.Advance(DefaultTokenRecheck)
	}
	h.clock.WaitTimer(h.clock.Now().Add(DefaultTokenRecheck)) // the 11th look is done
	if n := h.cloud.dials.Load(); n != 1 {
		t.Errorf("%d dials in five minutes with a refused token, want 1", n)
	}
	if n := h.tokens.Load(); n != 11 {
		t.Errorf("Token called %d times, want 11 (once per recheck)", n)
	}
	if got := h.link.State(); got != StateUnpaired {
		t.Errorf("state %q, want unpaired", got)
	}
	if n := h.logs.count(slog.LevelError); n != 1 {
		t.Errorf("%d ERROR records, want 1: %v", n, h.logs.msgs)
	}
	h.token.Store("tok-2")
	h.clock.Advance(DefaultTokenRecheck)
	h.cloud.welcome(t)
}

// TestNoTokenThenPaired ensures a missing token is unpaired without a dial
// and that CheckToken picks up a new one at once.
func TestNoTokenThenPaired(t *testing.T) {
	h := newHarness(t)
	h.token.Store("")
	h.start(t, h.options())
	h.clock.WaitTimer(h.clock.Now().Add(DefaultTokenRecheck))
	if h.link.State() != StateUnpaired || h.cloud.dials.Load() != 0 {
		t.Fatalf("state %q, %d dials", h.link.State(), h.cloud.dials.Load())
	}
	h.token.Store("tok-1")
	h.link.CheckToken()
	h.cloud.welcome(t)
}

// TestUnpairWhileOnline ensures a link that is online when a manager
// removes the device token (CheckToken after the file is gone) closes that
// connection at once and stays unpaired, without dialling again; a token
// checked and unchanged keeps the connection; a new token connects.
func TestUnpairWhileOnline(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.barrier(t)
	h.link.CheckToken() // same token: nothing happens
	p.barrier(t)
	states := make(chan string, 16)
	h.link.OnStateChange(func(s string) {
		select {
		case states <- s:
		default: // never block the link; the test reads long before 16
		}
	})
	h.token.Store("")
	h.link.CheckToken()
	p.closed(t)
	for st := ""; st != StateUnpaired; {
		select {
		case st = <-states:
		case <-time.After(wait):
			t.Fatalf("state %q after unpairing, want unpaired", h.link.State())
		}
	}
	if n := h.cloud.dials.Load(); n != 1 {
		t.Errorf("%d dials after unpairing, want the first only", n)
	}
	h.token.Store("tok-1")
	h.link.CheckToken()
	h.cloud.welcome(t)
}

// TestRevoke ensures a revoke makes the link unpaired, tells the agent,
// and that it does not reconnect with the same token.
func TestRevoke(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.barrier(t)
	p.send(t, &wire.Revoke{Reason: "store removed this PC"})
	p.closed(t)
	select {
	case r := <-h.revoked:
		if r != "store removed this PC" {
			t.Errorf("revoked reason %q", r)
		}
	case <-time.After(wait):
		t.Fatal("Revoked not called")
	}
	for range 4 {
		now := h.clock.Now()
		h.clock.Advance(h.clock.WaitTimer(now.Add(DefaultTokenRecheck)).Sub(now))
	}
	h.clock.WaitTimer(h.clock.Now().Add(DefaultTokenRecheck))
	if n := h.cloud.dials.Load(); n != 1 {
		t.Errorf("%d dials after revoke, want 1", n)
	}
	if h.link.State() != StateUnpaired || h.logs.count(slog.LevelError) != 1 {
		t.Errorf("state %q, %d ERROR records", h.link.State(), h.logs.count(slog.LevelError))
	}
}

// TestPingAndSilence ensures the link pings every PingInterval, that a
// pong or any frame counts as hearing from the cloud, and that a
// connection silent for SilenceTimeout is dropped.
func TestPingAndSilence(t *testing.T) {
	h := newHarness(t)
	pongs := make(chan struct{}, 16)
	testHookPong = func() { pongs <- struct{}{} }
	t.Cleanup(func() { testHookPong = nil })
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.barrier(t) // the connection's timers are armed
	// 100 s of pongs only, no frames.
	for i := range 5 {
		h.clock.Advance(wire.PingInterval)
		select {
		case <-p.pings:
		case <-time.After(wait):
			t.Fatalf("no ping %d", i+1)
		}
		select {
		case <-pongs: // the pong is read before the clock moves on
		case <-time.After(wait):
			t.Fatalf("pong %d not read", i+1)
		}
	}
	p.barrier(t) // fails if the link dropped the connection

	// No pongs now: only frames keep the connection.
	h.cloud.set(func(c *cloud) { c.noPong = true })
	p.ws.Close()
	h.reconnect(t)
	p2, _ := h.cloud.welcome(t)
	p2.barrier(t)
	h.clock.Advance(wire.SilenceTimeout - time.Second)
	p2.barrier(t) // alive; and a frame counts as heard
	h.clock.Advance(wire.SilenceTimeout - time.Second)
	p2.barrier(t) // alive: the frame a second ago reset the silence
	h.clock.Advance(wire.SilenceTimeout)
	p2.closed(t)
	<-h.logs.down
	if st := h.link.Stats(); !strings.Contains(st.LastError, "silence") {
		t.Errorf("last error %q", st.LastError)
	}
}

// TestCommands ensures reprint and cancel are answered with
// command_result: the new or canceled task, or the error's code.
func TestCommands(t *testing.T) {
	h := newHarness(t)
	h.accept(t, "C1_v1")
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.send(t, &wire.Reprint{ID: "r1", TaskNo: "C1_v1"})
	p.send(t, &wire.Cancel{ID: "c1", TaskNo: "C1_v1"})
	p.send(t, &wire.Cancel{ID: "c2", TaskNo: "C1_v1"})
	p.send(t, &wire.Reprint{ID: "r2", TaskNo: "GONE_v1"})
	var got []string
	for len(got) < 4 {
		switch m := p.next(t).(type) {
		case *wire.CommandResult:
			s := fmt.Sprintf("%s ok=%v %s", m.ID, m.OK, m.TaskNo)
			if m.Error != nil {
				s += " " + m.Error.Code
			}
			got = append(got, s)
		case *wire.Events: // the accepted task's events
		default:
			t.Fatalf("unexpected %s", m.Type())
		}
	}
	want := "[r1 ok=true C1_v1_r c1 ok=true C1_v1 c2 ok=false  conflict r2 ok=false  not_found]"
	if fmt.Sprint(got) != want {
		t.Fatalf("results %v\nwant    %v", got, want)
	}
	if task, _ := h.sp.Get("C1_v1"); task.State != spool.StateCanceled {
		t.Errorf("C1_v1 is %s", task.State)
	}
}

// TestCommandResentAfterReconnect ensures a command the cloud resends
// under the same id, after the connection that carried the first answer
// dropped, is answered with the first result and not run again: a reprint
// resent prints once. A first try the agent could not act on (unavailable) is
// not remembered, so its resend runs.
func TestCommandResentAfterReconnect(t *testing.T) {
	h := newHarness(t)
	h.accept(t, "C1_v1")
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	result := func(p *peer) *wire.CommandResult {
		t.Helper()
		for {
			switch m := p.next(t).(type) {
			case *wire.CommandResult:
				return m
			case *wire.Events:
			default:
				t.Fatalf("unexpected %s", m.Type())
			}
		}
	}
	p.send(t, &wire.Reprint{ID: "r1", TaskNo: "C1_v1"})
	if r := result(p); !r.OK || r.TaskNo != "C1_v1_r" {
		t.Fatalf("first reprint: %+v", r)
	}
	h.be.set(func(b *backend) { b.reprintFail = errUnavailable })
	p.send(t, &wire.Reprint{ID: "r2", TaskNo: "C1_v1"})
	if r := result(p); r.OK || r.Error.Code != "unavailable" {
		t.Fatalf("reprint the agent could not take: %+v", r)
	}
	p.ws.Close()
	h.reconnect(t)
	p2, _ := h.cloud.welcome(t)
	p2.send(t, &wire.Reprint{ID: "r1", TaskNo: "C1_v1"})
	if r := result(p2); !r.OK || r.ID != "r1" || r.TaskNo != "C1_v1_r" {
		t.Errorf("resent reprint: %+v, want the first result", r)
	}
	if n := h.be.reprints.Load(); n != 2 {
		t.Errorf("Reprint ran %d times, want 2 (r1 once, r2's refused first try)", n)
	}
	p2.send(t, &wire.Reprint{ID: "r2", TaskNo: "C1_v1"})
	if r := result(p2); !r.OK {
		t.Errorf("resend of a reprint first refused for now: %+v, want it run", r)
	}
	if n := h.be.reprints.Load(); n != 3 {
		t.Errorf("Reprint ran %d times, want 3", n)
	}
}

// TestRecentCommandsBounded ensures the memory of command results holds at
// most maxRecentCommands, forgetting the least recently seen first.
func TestRecentCommandsBounded(t *testing.T) {
	var r recentCommands
	add := func(id string) {
		t.Helper()
		e, first := r.begin(id)
		if !first {
			t.Fatalf("%s: not first", id)
		}
		r.finish(id, e, &wire.CommandResult{ID: id, OK: true, TaskNo: "T"}, true)
	}
	for i := range maxRecentCommands {
		add(fmt.Sprintf("c%d", i))
	}
	// c0 resent: now the most recently seen.
	if e, first := r.begin("c0"); first || e.result == nil || e.result.ID != "c0" {
		t.Fatalf("c0 not remembered: %+v %v", e, first)
	}
	add("extra")
	if n := r.len(); n != maxRecentCommands {
		t.Errorf("remembers %d results, want %d", n, maxRecentCommands)
	}
	if e, first := r.begin("c0"); first || e.result == nil {
		t.Error("c0, seen again, was forgotten")
	}
	if e, first := r.begin("c1"); !first {
		t.Error("the least recently seen id c1 was kept")
	} else {
		r.finish("c1", e, nil, false)
	}
}

// TestPrintersChanged ensures a printer change is pushed with every
// printer's current state.
func TestPrintersChanged(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.barrier(t)
	h.be.set(func(b *backend) { b.printers[1].State = "READY" })
	h.link.PrintersChanged()
	h.link.PrintersChanged()
	m := expect[*wire.Printers](t, p)
	if fmt.Sprint(m.Printers) != "[{kitchen READY} {bar READY}]" {
		t.Errorf("printers %v", m.Printers)
	}
	for _, m := range p.barrier(t) {
		if _, ok := m.(*wire.Printers); !ok {
			t.Errorf("unexpected %s", m.Type())
		}
	}
}

// tailer sends the lines it was given, then follows until stopped.
type tailer struct {
	lines   []string
	stopped chan string
}

func (tl *tailer) Tail(ctx context.Context, level, contains string, lines int, follow bool, send func([]string) error) error {
	var out []string
	for _, l := range tl.lines {
		if strings.Contains(l, contains) {
			out = append(out, l)
		}
	}
	if err := send(out[max(0, len(out)-lines):]); err != nil {
		return err
	}
	if follow {
		<-ctx.Done()
	}
	tl.stopped <- level
	return nil
}

// TestLogsTail ensures logs_tail streams log_lines until logs_stop, and
// that without a Tailer it is answered not_supported.
func TestLogsTail(t *testing.T) {
	h := newHarness(t)
	tl := &tailer{lines: []string{"a job", "b", "c job", "d job"}, stopped: make(chan string, 1)}
	o := h.options()
	o.Tailer = tl
	h.start(t, o)
	p, _ := h.cloud.welcome(t)
	p.send(t, &wire.LogsTail{ID: "t1", Level: "warn", Contains: "job", Lines: 2, Follow: true})
	if m := expect[*wire.LogLines](t, p); m.ID != "t1" || fmt.Sprint(m.Lines) != "[c job d job]" {
		t.Fatalf("log_lines %+v", m)
	}
	select {
	case <-tl.stopped:
		t.Fatal("a following tail stopped by itself")
	default:
	}
	p.send(t, &wire.LogsStop{ID: "t1"})
	select {
	case lv := <-tl.stopped:
		if lv != "warn" {
			t.Errorf("level %q", lv)
		}
	case <-time.After(wait):
		t.Fatal("logs_stop did not stop the tail")
	}
}

// TestLogsTailUnsupported ensures logs_tail without a Tailer is refused
// with a command_result.
func TestLogsTailUnsupported(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	p.send(t, &wire.LogsTail{ID: "t1", Follow: true})
	if r := expect[*wire.CommandResult](t, p); r.ID != "t1" || r.OK || r.Error.Code != "not_supported" {
		t.Fatalf("result %+v", r)
	}
}

// blockingTailer follows until its context ends and sends nothing.
type blockingTailer struct{}

func (blockingTailer) Tail(ctx context.Context, _, _ string, _ int, _ bool, _ func([]string) error) error {
	<-ctx.Done()
	return nil
}

// TestLogsTailBounded is the tail flood: a cloud that starts log tails
// and reads none once held the agent's memory without bound. At most
// MaxTails run per connection; one more is answered too_many_tails, and a
// tail stopped gives its place back.
func TestLogsTailBounded(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Tailer = blockingTailer{}
	h.start(t, o)
	p, _ := h.cloud.welcome(t)
	for i := 1; i <= MaxTails; i++ {
		p.send(t, &wire.LogsTail{ID: fmt.Sprintf("t%d", i), Follow: true})
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("the first %d tails were answered %+v, want them running", MaxTails, got)
	}
	p.send(t, &wire.LogsTail{ID: "one-more", Follow: true})
	if r := expect[*wire.CommandResult](t, p); r.ID != "one-more" || r.OK || r.Error == nil || r.Error.Code != "too_many_tails" {
		t.Fatalf("tail %d: %+v, want too_many_tails", MaxTails+1, r)
	}
	// The same id again replaces its tail; it is not one more.
	p.send(t, &wire.LogsTail{ID: "t1", Follow: true})
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("a tail restarted under its own id was answered %+v", got)
	}
	p.send(t, &wire.LogsStop{ID: "t2"})
	p.send(t, &wire.LogsTail{ID: "after-stop", Follow: true})
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("a tail after logs_stop was answered %+v, want it running", got)
	}
}

// TestPeerWarningsBounded is the log flood: a cloud sending unknown
// events_ack frames once got one WARN line each (243,730 in 9 s rotated
// the log three times). The first few of a minute are logged, the rest
// counted and summarised once the minute is over.
func TestPeerWarningsBounded(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	before := h.logs.count(slog.LevelWarn)
	for i := 0; i < 500; i++ {
		p.send(t, &wire.EventsAck{Batch: fmt.Sprintf("nope-%d", i)})
	}
	p.barrier(t)
	if n := h.logs.count(slog.LevelWarn) - before; n > warnlimit.PerMinute+1 {
		t.Fatalf("500 unknown acks logged %d WARN lines, want at most %d", n, warnlimit.PerMinute+1)
	}
}
