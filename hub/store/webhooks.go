package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"printgate/sync/wire"
)

// EventStateChanged is the type of the webhook message a job's state
// change becomes.
const EventStateChanged = "job.state_changed"

// MaxWebhooksPerTenant bounds a tenant's endpoints: each state change
// costs one delivery per endpoint.
const MaxWebhooksPerTenant = 16

// deliveryTTL is how long an undelivered message stays in hub_deliveries:
// longer than any retry schedule (a day and a bit), so the bucket never
// drops a message the sender still retries.
const deliveryTTL = 7 * 24 * time.Hour

// Webhook is a tenant's webhook endpoint. Secret is the Standard Webhooks
// signing secret (whsec_…), shown to the tenant once when it is added.
type Webhook struct {
	ID      string    `json:"id"`
	Tenant  string    `json:"tenant"`
	URL     string    `json:"url"`
	Secret  string    `json:"secret"`
	Created time.Time `json:"created"`
}

// Delivery is one message on its way to one endpoint: kept in
// hub_deliveries until the endpoint answers 2xx, then in hub_dead once the
// sender gives up, until an operator replays it.
type Delivery struct {
	// ID is the message's webhook-id: the same on every attempt and for
	// every endpoint, so a receiver dedupes on it.
	ID       string          `json:"id"`
	Endpoint string          `json:"endpoint"`
	Tenant   string          `json:"tenant"`
	Body     json.RawMessage `json:"body"`
	Created  time.Time       `json:"created"`
	Attempts int             `json:"attempts"`
	NextAt   time.Time       `json:"next_at"`
	// LastError says why the last attempt failed ("503", "timeout", …).
	LastError string    `json:"last_error,omitempty"`
	Dead      time.Time `json:"dead,omitzero"`
}

// Message is the body of a webhook delivery.
type Message struct {
	Type      string      `json:"type"`
	Timestamp time.Time   `json:"timestamp"`
	Data      MessageData `json:"data"`
}

// MessageData is a job's state change as a webhook tells it.
type MessageData struct {
	Store             string        `json:"store"`
	TaskNo            string        `json:"task_no"`
	State             string        `json:"state"`
	Reason            string        `json:"reason,omitempty"`
	Error             *wire.Problem `json:"error,omitempty"`
	Printer           string        `json:"printer,omitempty"`
	Target            string        `json:"target,omitempty"`
	Confirmation      string        `json:"confirmation,omitempty"`
	Attempts          int           `json:"attempts"`
	PossibleDuplicate bool          `json:"possible_duplicate,omitempty"`
	Origin            string        `json:"origin,omitempty"`
	// Seq and N are the agent event's life and number (N 0: a state of
	// the hub's own: STORED, REJECTED, EXPIRED).
	Seq uint64    `json:"seq,omitempty"`
	N   int       `json:"n"`
	At  time.Time `json:"at"`
}

// hookCacheTTL is how long a tenant's endpoint list is reused for the
// state changes of its jobs: listing the bucket per change would cost
// every submit and event a consumer. Adds and deletes on this node clear
// it at once; the TTL bounds how late another node's change is seen.
const hookCacheTTL = 10 * time.Second

// hookCache is the per-tenant endpoint lists enqueueChange reuses.
type hookCache struct {
	mu sync.Mutex
	m  map[string]cachedHooks
}

type cachedHooks struct {
	hooks []Webhook
	at    time.Time
}

func (c *hookCache) get(tenant string) ([]Webhook, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[tenant]
	if !ok || time.Since(e.at) > hookCacheTTL {
		return nil, false
	}
	return e.hooks, true
}

func (c *hookCache) put(tenant string, hooks []Webhook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) > 10000 {
		c.m = map[string]cachedHooks{}
	}
	c.m[tenant] = cachedHooks{hooks, time.Now()}
}

func (c *hookCache) clear(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, tenant)
}

func webhookKey(tenant, id string) string { return tenant + "." + id }

func deliveryKey(endpoint, id string) string { return endpoint + "." + id }

// AddWebhook stores a tenant's new endpoint. The caller makes its id and
// secret and checks its URL (hub/webhook). A tenant past
// MaxWebhooksPerTenant is refused with ErrFull, an unknown tenant with
// ErrNotFound.
func (s *Store) AddWebhook(ctx context.Context, w Webhook) error {
	if _, err := s.Tenant(ctx, w.Tenant); err != nil {
		return fmt.Errorf("tenant %s: %w", w.Tenant, err)
	}
	have, err := s.Webhooks(ctx, w.Tenant)
	if err != nil {
		return err
	}
	if len(have) >= MaxWebhooksPerTenant {
		return fmt.Errorf("store: add a webhook: tenant %s has %d endpoints: %w", w.Tenant, len(have), ErrFull)
	}
	defer s.hookCache.clear(w.Tenant)
	if _, err := s.webhooks.Create(ctx, webhookKey(w.Tenant, w.ID), mustJSON(w)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return ErrExists
		}
		return fmt.Errorf("store: add a webhook: %w", kvErr(err))
	}
	return nil
}

// Webhooks returns a tenant's endpoints by id.
func (s *Store) Webhooks(ctx context.Context, tenant string) ([]Webhook, error) {
	l, err := s.webhooks.ListKeysFiltered(ctx, tenant+".>")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: webhooks of %s: %w", tenant, err)
	}
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	l.Stop()
	slices.Sort(keys)
	var out []Webhook
	for _, k := range keys {
		var w Webhook
		if _, err := getJSON(ctx, s.webhooks, k, &w); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, fmt.Errorf("store: webhooks of %s: %w", tenant, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// WebhookByID returns a tenant's endpoint, or ErrNotFound (also for an
// endpoint of another tenant).
func (s *Store) WebhookByID(ctx context.Context, tenant, id string) (Webhook, error) {
	var w Webhook
	_, err := getJSON(ctx, s.webhooks, webhookKey(tenant, id), &w)
	return w, err
}

// DeleteWebhook removes a tenant's endpoint; its queued deliveries are
// dropped when the sender next meets them, its dead letters are purged.
func (s *Store) DeleteWebhook(ctx context.Context, tenant, id string) error {
	if _, err := s.WebhookByID(ctx, tenant, id); err != nil {
		return err
	}
	defer s.hookCache.clear(tenant)
	if err := s.webhooks.Purge(ctx, webhookKey(tenant, id)); err != nil {
		return fmt.Errorf("store: delete webhook %s: %w", id, kvErr(err))
	}
	dead, err := s.DeadLetters(ctx, id, 0)
	if err != nil {
		return err
	}
	for _, d := range dead {
		if err := s.dead.Purge(ctx, deliveryKey(id, d.ID), jetstream.PurgeTTL(pendingMarkerTTL)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("store: delete webhook %s: its dead letters: %w", id, kvErr(err))
		}
	}
	return nil
}

// DeliveryKick is signalled (never blocking, coalesced) when a delivery is
// queued, so the sender need not wait for its next scan.
func (s *Store) DeliveryKick() <-chan struct{} { return s.kick }

// maxOutbox bounds the webhook messages one record holds for the
// fan-out. The fan-out empties an outbox within moments of its write, so
// the bound is met only when it has stopped for long; past it the oldest
// messages are dropped (counted in Task.OutboxDropped) rather than the
// record growing without end.
const maxOutbox = MaxTimeline

// tasksStream and tasksSubject are hub_tasks as the engine keeps it: a
// stream whose messages are the records' writes, on the subject
// tasksSubject + key.
const (
	tasksStream  = "KV_hub_tasks"
	tasksSubject = "$KV.hub_tasks."
)

// fanOutPoint is the crash point of the webhook fan-out, before it queues
// a record's messages: a hub built for crash tests (-tags hubcrash) stops
// there whichever point the test names, so what the test kills has queued
// nothing the point's write carried.
const fanOutPoint = "fan-out"

// cursorKey is the fan-out's cursor in hub_cursors: the hub_tasks stream
// sequence up to which every record's outbox has been queued.
const cursorKey = "webhook_fanout"

// cursorEvery is how often the fan-out writes its cursor at most: a hub
// killed re-reads at most this much of hub_tasks, whose handled outboxes
// are already empty.
const cursorEvery = time.Second

// addOutbox puts the webhook messages of t's state changes ds in t's
// outbox, so they are written in the same write as the change: a hub
// killed after that write has them on disk, and the fan-out (RunOutbox)
// queues them to every endpoint after a restart as before it. A tenant
// without endpoints gets none.
func (s *Store) addOutbox(ctx context.Context, t *Task, now time.Time, ds ...MessageData) {
	if t.Tenant == "" || len(ds) == 0 || !s.hooked(ctx, t.Tenant) {
		return
	}
	for _, d := range ds {
		d.Store, d.TaskNo = t.Store, t.TaskNo
		if d.Origin == "" {
			d.Origin = t.Origin
		}
		t.Outbox = append(t.Outbox, Message{Type: EventStateChanged, Timestamp: now.UTC(), Data: d})
	}
	if n := len(t.Outbox) - maxOutbox; n > 0 {
		t.Outbox = slices.Delete(t.Outbox, 0, n)
		t.OutboxDropped += n
		s.hookWarn.Log(s.log, slog.LevelError, "hub store: a job's webhook outbox is full (is the fan-out stopped?); its receivers miss its oldest state changes", "store", t.Store, "task_no", t.TaskNo, "dropped", n)
	}
}

// hooked reports whether tenant has webhook endpoints, from the cache. An
// endpoint list it cannot read counts as some: the fan-out reads it again.
func (s *Store) hooked(ctx context.Context, tenant string) bool {
	hooks, err := s.tenantHooks(ctx, tenant)
	return err != nil || len(hooks) > 0
}

// tenantHooks is the tenant's endpoints, through hookCache.
func (s *Store) tenantHooks(ctx context.Context, tenant string) ([]Webhook, error) {
	if hooks, ok := s.hookCache.get(tenant); ok {
		return hooks, nil
	}
	hooks, err := s.Webhooks(ctx, tenant)
	if err != nil {
		return nil, err
	}
	s.hookCache.put(tenant, hooks)
	return hooks, nil
}

// messageID is a message's webhook-id, derived from the change it tells,
// so the same change queued twice (a fan-out that re-reads after a crash)
// is one message per endpoint, and a receiver dedupes what was sent twice.
func messageID(d MessageData) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{d.Store, d.TaskNo, strconv.FormatUint(d.Seq, 10),
		strconv.Itoa(d.N), d.State, d.Reason}, "\x00")))
	return "msg_" + hex.EncodeToString(sum[:16])
}

// RunOutbox is the webhook fan-out, until ctx ends. It reads the writes of
// hub_tasks in order (the bucket's stream, with an ephemeral ordered
// consumer, one per node) from its cursor in hub_cursors; for each record
// written with messages in its outbox it creates their deliveries, one
// per endpoint of the tenant (Create on a key derived from the change:
// idempotent), then removes them from the record's outbox by
// compare-and-set. A record updated again before it is read is read in
// its newest write, which still holds every message not yet removed. The
// cursor is written at most every cursorEvery; a hub killed re-reads from
// it, and a message queued and delivered but not yet removed from its
// outbox when the hub died is sent again under the same webhook-id (at
// least once).
func (s *Store) RunOutbox(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.fanOut(ctx)
		if ctx.Err() != nil {
			return
		}
		s.hookWarn.Log(s.log, slog.LevelError, "hub store: the webhook fan-out stopped; it starts again from its cursor in a second", "err", err)
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// fanOut is one run of RunOutbox's reading, until an error or ctx's end.
func (s *Store) fanOut(ctx context.Context) error {
	var cursor uint64
	if e, err := s.cursors.Get(ctx, cursorKey); err == nil {
		cursor, _ = strconv.ParseUint(string(e.Value()), 10, 64)
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("read the fan-out's cursor: %w", kvErr(err))
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if cursor > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, cursor+1
	}
	c, err := s.js.OrderedConsumer(ctx, tasksStream, cfg)
	if err != nil {
		return fmt.Errorf("read %s: %w", tasksStream, err)
	}
	saved, savedAt, seen := cursor, time.Now(), cursor
	recent := newRecentIDs(maxRecentIDs)
	save := func(ctx context.Context) error {
		if _, err := s.cursors.Put(ctx, cursorKey, []byte(strconv.FormatUint(seen, 10))); err != nil {
			return fmt.Errorf("write the fan-out's cursor: %w", kvErr(err))
		}
		saved, savedAt = seen, time.Now()
		return nil
	}
	// The handler runs in the subscription's one goroutine, a write after
	// another. Its first error stops the run (RunOutbox starts again from
	// the cursor, which never passed a write not handled).
	failed := make(chan error, 1)
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	stopped := false
	cc, err := c.Consume(func(msg jetstream.Msg) {
		if stopped {
			return
		}
		md, err := msg.Metadata()
		if err == nil {
			err = s.fanOutRecord(ctx, msg, recent)
		}
		if err != nil {
			stopped = true
			fail(err)
			return
		}
		seen = md.Sequence.Stream
		if seen > saved && time.Since(savedAt) >= cursorEvery {
			if err := save(ctx); err != nil {
				stopped = true
				fail(err)
			}
		}
	},
		// The records carry job bodies until acknowledged: bound what the
		// subscription holds fetched (a few of the largest records), far
		// below its pending limit, so it never drops a write.
		jetstream.PullMaxMessagesWithBytesLimit(64, 4*maxPayload),
		// The ordered consumer recovers from what it reports here itself
		// (a missed heartbeat, a reset); the lines are bounded.
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			s.hookWarn.Log(s.log, slog.LevelWarn, "hub store: the webhook fan-out's reading of hub_tasks", "err", err)
		}))
	if err != nil {
		return fmt.Errorf("read %s: %w", tasksStream, err)
	}
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case err = <-failed:
		err = fmt.Errorf("read %s: %w", tasksStream, err)
	}
	cc.Drain()
	// The handler has returned once the subscription is closed; a closed
	// connection may never say so: the run then ends without the last
	// cursor, which costs only a re-read.
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-cc.Closed():
	case <-t.C:
		return err
	}
	if seen > saved {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		save(sctx)
	}
	return err
}

// maxRecentIDs bounds the message ids a fan-out remembers having queued:
// far more than the writes its consumer holds fetched at once.
const maxRecentIDs = 4096

// recentIDs is the message ids one run of the fan-out has queued, the
// newest max of them. The consumer fetches writes ahead, so it may read a
// record's older write after the fan-out emptied that outbox from a newer
// one; a message it queued (and the sender may have delivered since) is
// not queued again. A restart forgets them: the record's outbox on disk is
// then what is true.
type recentIDs struct {
	set  map[string]bool
	ring []string
	next int
}

func newRecentIDs(max int) *recentIDs {
	return &recentIDs{set: make(map[string]bool, max), ring: make([]string, max)}
}

func (r *recentIDs) has(id string) bool { return r.set[id] }

func (r *recentIDs) add(id string) {
	if r.set[id] {
		return
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = id
	r.set[id] = true
	r.next = (r.next + 1) % len(r.ring)
}

// fanOutRecord queues the deliveries of one record write's outbox, except
// those recent says were queued already, and removes them from the record.
func (s *Store) fanOutRecord(ctx context.Context, msg jetstream.Msg, recent *recentIDs) error {
	if msg.Headers().Get("KV-Operation") != "" { // a delete or purge
		return nil
	}
	// Most writes carry no outbox (a tenant without endpoints, the
	// fan-out's own emptying): skip them without decoding a record that
	// may hold a job's body.
	if !bytes.Contains(msg.Data(), []byte(`"outbox":`)) {
		return nil
	}
	var t struct {
		Tenant string    `json:"tenant"`
		Outbox []Message `json:"outbox"`
	}
	if err := json.Unmarshal(msg.Data(), &t); err != nil || len(t.Outbox) == 0 || t.Tenant == "" {
		return nil
	}
	crashPoint(fanOutPoint)
	key := strings.TrimPrefix(msg.Subject(), tasksSubject)
	hooks, err := s.tenantHooks(ctx, t.Tenant)
	if err != nil {
		return err
	}
	done := make(map[string]bool, len(t.Outbox))
	for _, m := range t.Outbox {
		id := messageID(m.Data)
		done[id] = true
		if recent.has(id) {
			continue
		}
		body := mustJSON(m)
		for _, h := range hooks {
			dl := Delivery{ID: id, Endpoint: h.ID, Tenant: t.Tenant, Body: body, Created: m.Timestamp, NextAt: m.Timestamp}
			if _, err := s.deliveries.Create(ctx, deliveryKey(h.ID, id), mustJSON(dl)); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				return fmt.Errorf("queue webhook %s of %s: %w", h.ID, key, kvErr(err))
			}
		}
		recent.add(id)
	}
	if len(hooks) > 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	err = s.update(ctx, key, func(t *Task, found bool) bool {
		if !found {
			return false
		}
		n := len(t.Outbox)
		t.Outbox = slices.DeleteFunc(t.Outbox, func(m Message) bool { return done[messageID(m.Data)] })
		return len(t.Outbox) != n
	})
	if err != nil {
		return fmt.Errorf("empty the outbox of %s: %w", key, err)
	}
	return nil
}

// taskData is a task's current state as a webhook tells it.
func taskData(t Task) MessageData {
	return MessageData{State: t.State, Reason: t.Reason, Error: t.Error, Printer: t.Printer, Target: t.Target,
		Confirmation: t.Confirmation, Attempts: t.Attempts, PossibleDuplicate: t.PossibleDuplicate, Origin: t.Origin, At: t.Updated}
}

// Deliveries returns every queued delivery (not the dead letters), for
// the sender's scan. It reads at most limit of them (0: all).
func (s *Store) Deliveries(ctx context.Context, limit int) ([]Delivery, error) {
	return listDeliveries(ctx, s.deliveries, ">", limit)
}

// DeliveryKey names a queued delivery.
type DeliveryKey struct{ Endpoint, ID string }

// DeliveryKeys lists the queued deliveries' keys (not the dead letters),
// at most limit (0: all): the sender reads only those it does not know
// to be waiting.
func (s *Store) DeliveryKeys(ctx context.Context, limit int) ([]DeliveryKey, error) {
	l, err := s.deliveries.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list deliveries: %w", err)
	}
	defer l.Stop()
	var out []DeliveryKey
	for k := range l.Keys() {
		if limit > 0 && len(out) == limit {
			break
		}
		if ep, id, ok := strings.Cut(k, "."); ok {
			out = append(out, DeliveryKey{ep, id})
		}
	}
	return out, nil
}

// DeadLetters returns an endpoint's dead letters (0: all).
func (s *Store) DeadLetters(ctx context.Context, endpoint string, limit int) ([]Delivery, error) {
	return listDeliveries(ctx, s.dead, endpoint+".>", limit)
}

func listDeliveries(ctx context.Context, kv jetstream.KeyValue, filter string, limit int) ([]Delivery, error) {
	l, err := kv.ListKeysFiltered(ctx, filter)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list deliveries: %w", err)
	}
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	l.Stop()
	var out []Delivery
	for _, k := range keys {
		if limit > 0 && len(out) == limit {
			break
		}
		var d Delivery
		if _, err := getJSON(ctx, kv, k, &d); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, fmt.Errorf("store: read delivery %s: %w", k, err)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Delivery) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Delivery reads one queued delivery, or ErrNotFound once it is
// delivered, dead or dropped.
func (s *Store) Delivery(ctx context.Context, endpoint, id string) (Delivery, error) {
	var d Delivery
	_, err := getJSON(ctx, s.deliveries, deliveryKey(endpoint, id), &d)
	return d, err
}

// Delivered removes a delivery its endpoint answered 2xx (or whose
// endpoint is gone).
func (s *Store) Delivered(ctx context.Context, d Delivery) error {
	if err := s.deliveries.Purge(ctx, deliveryKey(d.Endpoint, d.ID), jetstream.PurgeTTL(pendingMarkerTTL)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("store: delivered %s: %w", d.ID, kvErr(err))
	}
	return nil
}

// Retry records a failed attempt and when to try again.
func (s *Store) Retry(ctx context.Context, d Delivery) error {
	if _, err := s.deliveries.Put(ctx, deliveryKey(d.Endpoint, d.ID), mustJSON(d)); err != nil {
		return fmt.Errorf("store: retry %s: %w", d.ID, kvErr(err))
	}
	return nil
}

// Bury moves a delivery the sender gave up on to the dead letters.
func (s *Store) Bury(ctx context.Context, d Delivery, now time.Time) error {
	d.Dead = now
	if _, err := s.dead.Put(ctx, deliveryKey(d.Endpoint, d.ID), mustJSON(d)); err != nil {
		return fmt.Errorf("store: dead letter %s: %w", d.ID, kvErr(err))
	}
	return s.Delivered(ctx, d)
}

// Replay queues an endpoint's dead letters again, each with a fresh retry
// schedule from now, and returns how many.
func (s *Store) Replay(ctx context.Context, endpoint string, now time.Time) (int, error) {
	dead, err := s.DeadLetters(ctx, endpoint, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range dead {
		d.Dead, d.Attempts, d.Created, d.NextAt, d.LastError = time.Time{}, 0, now, now, ""
		if _, err := s.deliveries.Put(ctx, deliveryKey(d.Endpoint, d.ID), mustJSON(d)); err != nil {
			return n, fmt.Errorf("store: replay %s: %w", d.ID, kvErr(err))
		}
		if err := s.dead.Purge(ctx, deliveryKey(d.Endpoint, d.ID), jetstream.PurgeTTL(pendingMarkerTTL)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return n, fmt.Errorf("store: replay %s: %w", d.ID, kvErr(err))
		}
		n++
	}
	if n > 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return n, nil
}
