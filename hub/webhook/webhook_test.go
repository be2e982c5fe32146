package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/hub/store"
	"printgate/internal/backoff"
	"printgate/internal/clock"
	"printgate/sync/wire"
)

var s1 = store.StoreInfo{ID: "s1", Tenant: "acme"}

// openStore opens a real embedded engine in a temp dir.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir(), Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// addEndpoint adds an endpoint of acme at url and returns it.
func addEndpoint(t *testing.T, st *store.Store, url string) store.Webhook {
	t.Helper()
	id, err := NewID()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddTenant(context.Background(), "acme", ""); err != nil && !errors.Is(err, store.ErrExists) {
		t.Fatal(err)
	}
	w := store.Webhook{ID: id, Tenant: "acme", URL: url, Secret: secret, Created: time.Now()}
	if err := st.AddWebhook(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func job(no string) wire.Job {
	return wire.Job{TaskNo: no, Printer: "kitchen", Document: []byte(`{"lines":[{"text":"` + no + `"}]}`)}
}

// waitFor polls cond (every 10 ms of real time, up to d): for what
// another goroutine does, never for a timer.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCheckURL holds the endpoint URL rule: https, or http to loopback
// only; every refusal says the fix.
func TestCheckURL(t *testing.T) {
	for _, ok := range []string{"https://orders.example.com/hook", "http://127.0.0.1:8080/h", "http://127.9.9.9/h", "http://[::1]:9/h", "http://localhost/h", "https://10.0.0.1/h"} {
		if err := CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q) = %v, want accepted", ok, err)
		}
	}
	for _, bad := range []string{"", "http://orders.example.com/hook", "http://10.0.0.1/h", "http://localhost.example.com/h", "ftp://x/h",
		"https://user:pw@x/h", "/relative", "https://x/h#frag", "https://" + strings.Repeat("a", 3000)} {
		err := CheckURL(bad)
		if !errors.Is(err, ErrBadURL) {
			t.Errorf("CheckURL(%q) = %v, want ErrBadURL", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), "use") && !strings.Contains(err.Error(), "give") && !strings.Contains(err.Error(), "remove") {
			t.Errorf("CheckURL(%q) = %q: says no fix", bad, err)
		}
	}
}

// TestSignSpecExample checks Sign against the example of the Standard
// Webhooks specification's reference libraries.
func TestSignSpecExample(t *testing.T) {
	got, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

// attempt is one request a Go receiver saw.
type attempt struct {
	id, ts, sig string
	body        []byte
}

// goReceiver answers status() to every delivery and records them.
type goReceiver struct {
	mu       sync.Mutex
	attempts []attempt
	status   int
}

func (g *goReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.attempts = append(g.attempts, attempt{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), b})
	st := g.status
	g.mu.Unlock()
	w.WriteHeader(st)
}

func (g *goReceiver) seen() []attempt {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]attempt(nil), g.attempts...)
}

// TestRetriedForADayThenDeadThenReplayed: a receiver that answers 503 is
// retried with growing delays for at least MaxAge (a day, on the injected
// clock) under one webhook-id, then the message is a dead letter; replayed
// once the receiver is back, it arrives signed with the same id.
func TestRetriedForADayThenDeadThenReplayed(t *testing.T) {
	st := openStore(t)
	rcv := &goReceiver{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ep := addEndpoint(t, st, srv.URL)
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFakeClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	s := New(st, Options{Clock: clk})
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if _, err := st.Submit(ctx, s1, job("ORD-1_K_v1"), "x", t0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "no first attempt", func() bool { return len(rcv.seen()) == 1 })
	// Move the clock an hour (the backoff's cap) at a time until the
	// message is dead; each step makes the retry due.
	var dead []store.Delivery
	for i := 0; i < 60 && len(dead) == 0; i++ {
		n := len(rcv.seen())
		clk.Advance(time.Hour)
		waitFor(t, 10*time.Second, "no attempt after an hour", func() bool {
			var err error
			dead, err = st.DeadLetters(ctx, ep.ID, 0)
			return err == nil && len(dead) > 0 || len(rcv.seen()) > n
		})
		if len(dead) == 0 {
			// The attempt may still be recorded: read the dead letters
			// again once it is.
			waitFor(t, 10*time.Second, "attempt not recorded", func() bool {
				q, _ := st.Deliveries(ctx, 0)
				d, _ := st.DeadLetters(ctx, ep.ID, 0)
				dead = d
				return len(d) > 0 || len(q) == 1 && q[0].Attempts == len(rcv.seen())
			})
		}
	}
	if len(dead) != 1 {
		t.Fatalf("no dead letter after 60 hours of retries: %d attempts", len(rcv.seen()))
	}
	d := dead[0]
	if age := d.Dead.Sub(d.Created); age < DefaultMaxAge {
		t.Errorf("dead after %v, want retries for at least %v", age, DefaultMaxAge)
	}
	seen := rcv.seen()
	if len(seen) < 10 || d.Attempts != len(seen) {
		t.Errorf("%d attempts seen, %d recorded; want the same, at least 10", len(seen), d.Attempts)
	}
	for _, a := range seen {
		if a.id != d.ID {
			t.Fatalf("attempt with webhook-id %q, want %q on every attempt", a.id, d.ID)
		}
	}
	if q, _ := st.Deliveries(ctx, 0); len(q) != 0 {
		t.Errorf("%d deliveries still queued beside the dead letter", len(q))
	}

	rcv.mu.Lock()
	rcv.status = http.StatusNoContent
	rcv.mu.Unlock()
	if n, err := st.Replay(ctx, ep.ID, clk.Now()); err != nil || n != 1 {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	waitFor(t, 10*time.Second, "the replayed message did not arrive", func() bool {
		q, _ := st.Deliveries(ctx, 0)
		return len(q) == 0 && len(rcv.seen()) == len(seen)+1
	})
	last := rcv.seen()[len(seen)]
	if last.id != d.ID {
		t.Errorf("replayed with id %q, want %q", last.id, d.ID)
	}
	if err := Verify(ep.Secret, last.id, last.ts, last.sig, last.body, clk.Now(), 5*time.Minute); err != nil {
		t.Errorf("replayed delivery: %v", err)
	}
	var m store.Message
	if err := json.Unmarshal(last.body, &m); err != nil || m.Type != store.EventStateChanged || m.Data.State != store.StateStored || m.Data.TaskNo != "ORD-1_K_v1" {
		t.Errorf("replayed body %s (%v)", last.body, err)
	}
	if d, _ := st.DeadLetters(ctx, ep.ID, 0); len(d) != 0 {
		t.Errorf("%d dead letters after the replay", len(d))
	}
}

// TestBoundedInFlight: a slow receiver never has more than InFlight
// requests open at once.
func TestBoundedInFlight(t *testing.T) {
	st := openStore(t)
	var mu sync.Mutex
	open, peak, total := 0, 0, 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		open++
		total++
		peak = max(peak, open)
		mu.Unlock()
		<-release
		mu.Lock()
		open--
		mu.Unlock()
	}))
	defer srv.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before srv.Close, which waits for the handlers
	addEndpoint(t, st, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	s := New(st, Options{InFlight: 3, Backoff: &backoff.Backoff{Base: time.Millisecond, Factor: 1}, Scan: 20 * time.Millisecond})
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for _, no := range []string{"A", "B", "C", "D", "E", "F", "G", "H"} {
		if _, err := st.Submit(ctx, s1, job(no), "x", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "three requests not open", func() bool { mu.Lock(); defer mu.Unlock(); return open == 3 })
	// Give a sender without a bound the time to open more.
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	if open != 3 {
		t.Errorf("%d requests open, want 3", open)
	}
	mu.Unlock()
	free()
	waitFor(t, 20*time.Second, "not every message delivered", func() bool {
		q, _ := st.Deliveries(ctx, 0)
		return len(q) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if peak > 3 || total < 8 {
		t.Errorf("peak %d requests open (want at most 3), %d sent (want 8)", peak, total)
	}
}

// TestQueueSurvivesRestart: a state change queued while no sender runs
// (the hub stopped after answering) is delivered by the sender of the
// reopened record: the queue is on disk, not in memory.
func TestQueueSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Options{Dir: dir, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	rcv := &goReceiver{status: http.StatusOK}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ep := addEndpoint(t, st, srv.URL)
	if _, err := st.Submit(context.Background(), s1, job("ORD-9_K_v1"), "x", time.Now()); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, err = store.Open(context.Background(), store.Options{Dir: dir, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	s := New(st, Options{})
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "the queued message was not delivered after the restart", func() bool { return len(rcv.seen()) == 1 })
	a := rcv.seen()[0]
	if err := Verify(ep.Secret, a.id, a.ts, a.sig, a.body, time.Now(), time.Minute); err != nil {
		t.Error(err)
	}
}
