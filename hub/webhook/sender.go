package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"printgate/hub/store"
	"printgate/internal/backoff"
	"printgate/internal/clock"
	"printgate/internal/warnlimit"
)

// Defaults of Options.
const (
	// DefaultInFlight bounds the deliveries sent at once by a node.
	DefaultInFlight = 8
	// DefaultTimeout bounds one attempt: a receiver that answers later
	// counts as failed, and the message is sent again.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxAge is how long a message is retried before it becomes a
	// dead letter: a day, so a receiver down over a night and a morning
	// still gets everything when it returns.
	DefaultMaxAge = 24 * time.Hour
	// DefaultScan is how often the queue is read when nothing woke the
	// sender earlier.
	DefaultScan = 5 * time.Second
	// maxScan bounds the deliveries one scan reads.
	maxScan = 10000
)

// DefaultBackoff is the retry schedule: 5 s doubling up to an hour, each
// delay spread over ±50 % so endpoints that fail together do not retry
// together; about 30 attempts in a day.
var DefaultBackoff = backoff.Backoff{Base: 5 * time.Second, Factor: 2, Cap: time.Hour, Jitter: 0.5}

// Delivery results, the label of printgate_hub_webhook_deliveries_total.
const (
	ResultDelivered = "delivered" // the endpoint answered 2xx
	ResultFailed    = "failed"    // an attempt failed; it is retried
	ResultDead      = "dead"      // retried MaxAge; moved to the dead letters
	ResultDropped   = "dropped"   // the endpoint was deleted meanwhile
)

// Queue is what the sender asks of the record (hub/store).
type Queue interface {
	DeliveryKeys(ctx context.Context, limit int) ([]store.DeliveryKey, error)
	Delivery(ctx context.Context, endpoint, id string) (store.Delivery, error)
	WebhookByID(ctx context.Context, tenant, id string) (store.Webhook, error)
	Delivered(ctx context.Context, d store.Delivery) error
	Retry(ctx context.Context, d store.Delivery) error
	Bury(ctx context.Context, d store.Delivery, now time.Time) error
	DeliveryKick() <-chan struct{}
	// RunOutbox turns the state changes written with their messages into
	// deliveries, until ctx ends (the fan-out).
	RunOutbox(ctx context.Context)
}

// Counter counts deliveries by result (hub/metrics).
type Counter interface {
	Delivery(result string)
}

// Options configures a Sender.
type Options struct {
	// Clock schedules retries and stamps attempts (default the real
	// clock).
	Clock clock.Clock
	// Client sends the requests (default: one that follows no redirect).
	Client *http.Client
	// Logger receives the sender's lines, rate-limited where a receiver
	// causes them (default slog.Default()).
	Logger *slog.Logger
	// Metrics counts deliveries (nil: none).
	Metrics Counter
	// InFlight bounds the requests open at once (default DefaultInFlight).
	InFlight int
	// Timeout bounds one attempt (default DefaultTimeout).
	Timeout time.Duration
	// Backoff is the delay after a failed attempt (default
	// DefaultBackoff).
	Backoff *backoff.Backoff
	// MaxAge is how long after it was queued a message is still retried
	// (default DefaultMaxAge).
	MaxAge time.Duration
	// Scan is how often the queue is read at the latest (default
	// DefaultScan).
	Scan time.Duration
}

// Sender delivers the queued messages until its Run's context ends.
type Sender struct {
	q    Queue
	opts Options
	log  *slog.Logger
	warn warnlimit.Limiter

	mu       sync.Mutex
	inFlight map[string]bool // endpoint.id of the deliveries being sent
	// waiting holds when each delivery this sender rescheduled is due
	// (keys and times, not bodies), so a scan reads only the new and the
	// due ones: a large backlog of a receiver that is down costs a scan a
	// key listing, not a read of every message.
	waiting map[store.DeliveryKey]time.Time
	wg      sync.WaitGroup
	slots   chan struct{}
	done    chan struct{} // a send ended: scan again
}

// New makes a sender over q.
func New(q Queue, opts Options) *Sender {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock()
	}
	if opts.Client == nil {
		opts.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.InFlight <= 0 {
		opts.InFlight = DefaultInFlight
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Backoff == nil {
		b := DefaultBackoff
		opts.Backoff = &b
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.Scan <= 0 {
		opts.Scan = DefaultScan
	}
	s := &Sender{q: q, opts: opts, log: opts.Logger, inFlight: map[string]bool{}, waiting: map[store.DeliveryKey]time.Time{},
		slots: make(chan struct{}, opts.InFlight), done: make(chan struct{}, 1)}
	s.warn.Now = opts.Clock.Now
	return s
}

// Run sends until ctx ends, then waits for the attempts in flight. It
// runs the queue's fan-out (Queue.RunOutbox) beside it for as long.
func (s *Sender) Run(ctx context.Context) {
	defer s.wg.Wait()
	fanned := make(chan struct{})
	go func() {
		defer close(fanned)
		s.q.RunOutbox(ctx)
	}()
	defer func() { <-fanned }()
	t := s.opts.Clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-s.q.DeliveryKick():
		case <-s.done:
		}
		next := s.scan(ctx)
		t.Reset(next)
	}
}

// scan starts the due deliveries and returns how long to sleep: until the
// earliest one not yet due, at most Scan.
func (s *Sender) scan(ctx context.Context) time.Duration {
	wait := s.opts.Scan
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	keys, err := s.q.DeliveryKeys(sctx, maxScan)
	if err != nil {
		if ctx.Err() == nil {
			s.warn.Log(s.log, slog.LevelError, "hub webhook: read the delivery queue", "err", err)
		}
		return wait
	}
	now := s.opts.Clock.Now()
	listed := make(map[store.DeliveryKey]bool, len(keys))
	for _, k := range keys {
		listed[k] = true
	}
	s.mu.Lock()
	for k := range s.waiting {
		if !listed[k] {
			delete(s.waiting, k) // delivered, dead or dropped
		}
	}
	s.mu.Unlock()
	for _, k := range keys {
		key := k.Endpoint + "." + k.ID
		s.mu.Lock()
		busy := s.inFlight[key]
		at, known := s.waiting[k]
		s.mu.Unlock()
		if busy {
			continue
		}
		if known {
			if due := at.Sub(now); due > 0 {
				wait = min(wait, due)
				continue
			}
		}
		d, err := s.q.Delivery(sctx, k.Endpoint, k.ID)
		if err != nil {
			continue // delivered meanwhile
		}
		if due := d.NextAt.Sub(now); due > 0 {
			s.mu.Lock()
			s.waiting[k] = d.NextAt
			s.mu.Unlock()
			wait = min(wait, due)
			continue
		}
		select {
		case s.slots <- struct{}{}:
		default:
			// Every slot is busy: the end of a send scans again.
			return wait
		}
		s.mu.Lock()
		s.inFlight[key] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.send(ctx, d)
			s.mu.Lock()
			delete(s.inFlight, key)
			s.mu.Unlock()
			<-s.slots
			select {
			case s.done <- struct{}{}:
			default:
			}
		}()
	}
	return wait
}

// send makes one attempt of d and records its outcome.
func (s *Sender) send(ctx context.Context, d store.Delivery) {
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The scan's list may be stale: a send that ended after it was read
	// has delivered or rescheduled the message. Read it again.
	d, err := s.q.Delivery(rctx, d.Endpoint, d.ID)
	if err != nil || d.NextAt.After(s.opts.Clock.Now()) {
		return
	}
	ep, err := s.q.WebhookByID(rctx, d.Tenant, d.Endpoint)
	if errors.Is(err, store.ErrNotFound) {
		if err := s.q.Delivered(rctx, d); err == nil {
			s.count(ResultDropped)
		}
		return
	}
	if err != nil {
		s.warn.Log(s.log, slog.LevelError, "hub webhook: read an endpoint", "endpoint", d.Endpoint, "err", err)
		return
	}
	failure := s.attempt(ctx, ep, d)
	if ctx.Err() != nil {
		return // stopping: the attempt is made again after the restart
	}
	now := s.opts.Clock.Now()
	if failure == "" {
		if err := s.q.Delivered(rctx, d); err != nil {
			s.warn.Log(s.log, slog.LevelError, "hub webhook: record a delivery (it will be sent again)", "endpoint", d.Endpoint, "id", d.ID, "err", err)
			return
		}
		s.count(ResultDelivered)
		return
	}
	d.Attempts++
	d.LastError = failure
	if now.Sub(d.Created) >= s.opts.MaxAge {
		if err := s.q.Bury(rctx, d, now); err != nil {
			s.warn.Log(s.log, slog.LevelError, "hub webhook: move a delivery to the dead letters", "endpoint", d.Endpoint, "id", d.ID, "err", err)
			return
		}
		s.count(ResultDead)
		s.warn.Warn(s.log, "hub webhook: an endpoint failed every attempt for a day; the message is a dead letter: fix the receiver, then POST /v1/webhooks/{id}/dead/replay",
			"endpoint", d.Endpoint, "id", d.ID, "attempts", d.Attempts, "last_error", failure)
		return
	}
	d.NextAt = now.Add(s.opts.Backoff.Delay(d.Attempts - 1))
	if err := s.q.Retry(rctx, d); err != nil {
		s.warn.Log(s.log, slog.LevelError, "hub webhook: record a failed attempt", "endpoint", d.Endpoint, "id", d.ID, "err", err)
		return
	}
	s.mu.Lock()
	s.waiting[store.DeliveryKey{Endpoint: d.Endpoint, ID: d.ID}] = d.NextAt
	s.mu.Unlock()
	s.count(ResultFailed)
	s.warn.Warn(s.log, "hub webhook: a delivery failed; it is retried with backoff", "endpoint", d.Endpoint, "id", d.ID,
		"attempt", d.Attempts, "error", failure, "next", d.NextAt)
}

// attempt POSTs d to ep, signed, and returns "" on a 2xx answer, else
// what went wrong.
func (s *Sender) attempt(ctx context.Context, ep store.Webhook, d store.Delivery) string {
	ts := s.opts.Clock.Now()
	sig, err := Sign(ep.Secret, d.ID, ts, d.Body)
	if err != nil {
		return err.Error()
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, ep.URL, strings.NewReader(string(d.Body)))
	if err != nil {
		return fmt.Sprintf("request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "printgate-hub")
	req.Header.Set("webhook-id", d.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Sprintf("no answer within %v", s.opts.Timeout)
		}
		return err.Error()
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return ""
}

func (s *Sender) count(result string) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.Delivery(result)
	}
}
