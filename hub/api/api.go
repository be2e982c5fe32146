package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"printgate/drivers/escpos"
	"printgate/hub/agentlink"
	"printgate/hub/metrics"
	"printgate/hub/store"
	"printgate/internal/clock"
	"printgate/internal/warnlimit"
	"printgate/sync/wire"
)

// Error codes, the agent's (PROTOCOL.md §3) where the case is the same.
const (
	CodeBadJSON         = "bad_json"
	CodeUnknownField    = "unknown_field"
	CodeInvalidTask     = "invalid_task"
	CodeBadPayload      = "bad_payload"
	CodeBadDocument     = "bad_document"
	CodeBadTimeout      = "bad_timeout"
	CodeUnauthorized    = "unauthorized"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	CodePayloadTooLarge = "payload_too_large"
	CodeStorageFull     = "storage_full"
	CodeUnavailable     = "unavailable"
	CodeInternal        = "internal"
	CodeExpired         = "expired"
	CodeNotConnected    = "not_connected"
	CodeInvalidCommand  = "invalid_command"
	CodeBadQuery        = "bad_query"
	CodeTooManyRequests = "too_many_requests"
	// CodeMethodNotAllowed: the path is a route's, the method is not.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeStoreQuota: the store holds as many jobs as max_jobs_per_store
	// allows (507).
	CodeStoreQuota = "store_quota"
	// CodeTenantQuota: the key's tenant holds as many jobs as
	// max_jobs_per_tenant allows (429).
	CodeTenantQuota = "tenant_quota"
)

// maxBodyBytes bounds a submit request: a 1 MiB payload is 1.34 MiB as
// base64, with room for the other fields.
const maxBodyBytes = 2 << 20

// requestTimeout bounds the store's work for one request.
const requestTimeout = 15 * time.Second

// Options configures a Handler.
type Options struct {
	// Clock stamps submissions (default the real clock).
	Clock clock.Clock
	// Logger receives the API's lines (default slog.Default()).
	Logger *slog.Logger
	// Metrics counts submits by result (nil: none).
	Metrics *metrics.Metrics
	// Link, when set, tells a connected agent its tokens were revoked
	// and what the stores' agents said.
	Link Link
	// TailLimit bounds how long one log tail streams (default
	// DefaultTailLimit).
	TailLimit time.Duration
}

// Link is what the API asks of the agents' link (agentlink.Server).
type Link interface {
	// Revoke tells the store's connected agent its device tokens are
	// revoked (a revoke frame, then close).
	Revoke(store, reason string) bool
	// Status is what the node knows of the store's agent.
	Status(store string) (agentlink.AgentStatus, bool)
	// Send queues a command on the store's connection.
	Send(store string, m wire.Message) error
	// Tail follows the store's agent's log.
	Tail(store string, opts agentlink.TailOptions) (*agentlink.Tail, error)
	// IsConnected reports whether the store's agent is connected here.
	IsConnected(store string) bool
}

// API serves the order API over a store.
type API struct {
	st       *store.Store
	opts     Options
	log      *slog.Logger
	mux      *http.ServeMux
	throttle throttle
	// codes counts unknown pairing codes per tenant (see decide).
	codes throttle
	// tails counts the log tails streaming per tenant (see logs).
	tailMu sync.Mutex
	tails  map[string]int
	// lines rate-limits the log lines a caller can provoke at will (a
	// refused submit, a log tail started): see internal/warnlimit.
	lines warnlimit.Limiter
}

// New makes the order API over st.
func New(st *store.Store, opts Options) *API {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TailLimit <= 0 {
		opts.TailLimit = DefaultTailLimit
	}
	a := &API{st: st, opts: opts, log: opts.Logger, mux: http.NewServeMux(), tails: map[string]int{}}
	a.throttle.now = opts.Clock.Now
	a.codes.now = opts.Clock.Now
	a.lines.Now = opts.Clock.Now
	for _, rt := range a.routes() {
		a.mux.HandleFunc(rt.pattern, rt.h)
	}
	// Anything else under /v1/ is answered in the API's error format.
	a.mux.HandleFunc("/v1/", a.noRoute)
	return a
}

// route is one pattern of the API's mux and its handler.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// routes are the API's operations, each as docs/hub-openapi.yaml names it
// (the tests hold the two to each other through Patterns).
func (a *API) routes() []route {
	return []route{
		{"POST /v1/stores/{store}/jobs", a.auth(a.submit)},
		{"GET /v1/stores/{store}/jobs/{task_no}", a.auth(a.getJob)},
		{"GET /v1/stores/{store}/jobs", a.auth(a.listJobs)},
		{"POST /v1/stores/{store}/revoke", a.auth(a.revoke)},
		{"POST /v1/stores/{store}/jobs/{task_no}/reprint", a.auth(a.command(wire.TypeReprint))},
		{"POST /v1/stores/{store}/jobs/{task_no}/cancel", a.auth(a.command(wire.TypeCancel))},
		{"GET /v1/stores/{store}/commands/{id}", a.auth(a.getCommand)},
		{"GET /v1/stores/{store}", a.auth(a.getStore)},
		{"GET /v1/stores/{store}/logs", a.authFor(a.logs, true)},
		{"GET /v1/stores", a.listStores},
		{"POST /v1/stores/{store}/pairings/{user_code}/approve", a.auth(a.decide(true))},
		{"POST /v1/stores/{store}/pairings/{user_code}/deny", a.auth(a.decide(false))},
		{"POST /v1/webhooks", a.keyed(a.addWebhook)},
		{"GET /v1/webhooks", a.keyed(a.listWebhooks)},
		{"DELETE /v1/webhooks/{id}", a.keyed(a.deleteWebhook)},
		{"GET /v1/webhooks/{id}/dead", a.keyed(a.listDead)},
		{"POST /v1/webhooks/{id}/dead/replay", a.keyed(a.replayDead)},
	}
}

// Patterns are the API's routes as "METHOD /path" ServeMux patterns.
func (a *API) Patterns() []string {
	var out []string
	for _, rt := range a.routes() {
		out = append(out, rt.pattern)
	}
	return out
}

// noRoute answers a request no route takes: 405 method_not_allowed with
// Allow when the path is a route's under another method, else 404
// not_found, both in the API's error format.
func (a *API) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := a.mux.Handler(probe); pattern != "/v1/" && pattern != "" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			fmt.Sprintf("%s is not served at %s; it takes %s (docs/hub-openapi.yaml)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route %s; the order API's routes are in docs/hub-openapi.yaml", r.URL.Path))
}

// ServeHTTP serves the routes under /v1/.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// handler is a route that knows its caller's store.
type handler func(w http.ResponseWriter, r *http.Request, st store.StoreInfo)

// checkKey checks the request's API key and returns it; it has answered
// the request when it returns false.
func (a *API) checkKey(w http.ResponseWriter, r *http.Request) (store.APIKey, bool) {
	scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	secret = strings.TrimSpace(secret)
	addr := clientAddr(r)
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		if left := a.throttle.locked(addr); left > 0 {
			tooMany(w, left)
			return store.APIKey{}, false
		}
		unauthorized(w, "Authorization: Bearer <API key> is required; make a key with `printgate-hub key add --tenant ID`")
		return store.APIKey{}, false
	}
	key, err := a.st.APIKey(r.Context(), secret)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrRevoked):
		// The key is checked first: a right key is never throttled.
		if left := a.throttle.locked(addr); left > 0 {
			tooMany(w, left)
			return key, false
		}
		a.throttle.wrong(addr)
		if a.throttle.locked(addr) > 0 {
			a.lines.Warn(a.log, "hub api: too many wrong API keys; this address is refused for a minute", "addr", addr)
		}
		unauthorized(w, "the API key is unknown or revoked; use a key `printgate-hub key add` made for your tenant")
		return key, false
	case err != nil:
		a.log.Error("hub api: check an API key", "err", err)
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the hub cannot check keys now; retry")
		return key, false
	}
	return key, true
}

// auth checks the API key and that the path's store is the key's tenant's.
// Another tenant's store is answered exactly as a store that does not
// exist, so a key learns nothing of other tenants.
func (a *API) auth(next handler) http.HandlerFunc { return a.authFor(next, false) }

// authFor is auth; a stream's handler runs past requestTimeout (the
// checks do not).
func (a *API) authFor(next handler, stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		long := r
		r = r.WithContext(ctx)
		key, ok := a.checkKey(w, r)
		if !ok {
			return
		}
		id := r.PathValue("store")
		st, err := a.st.StoreInfo(ctx, id)
		if err == nil && st.Tenant != key.Tenant {
			err = store.ErrNotFound
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no store %q in your tenant; add it with `printgate-hub store add`", id))
			return
		case err != nil:
			a.log.Error("hub api: read a store", "store", id, "err", err)
			writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the hub cannot read stores now; retry")
			return
		}
		if stream {
			r = long
		}
		next(w, r, st)
	}
}

// submitBody is the body of POST /v1/stores/{store}/jobs: the agent's
// submit fields.
type submitBody struct {
	TaskNo   string          `json:"task_no"`
	Printer  string          `json:"printer"`
	Priority string          `json:"priority"`
	Payload  *string         `json:"payload"`
	Document json.RawMessage `json:"document"`
	Timeout  string          `json:"timeout"`
}

// submitAnswer is the answer to a submit.
type submitAnswer struct {
	TaskNo    string `json:"task_no"`
	Store     string `json:"store"`
	State     string `json:"state"`
	Duplicate bool   `json:"duplicate"`
}

// submit stores a job: 202 once it is on disk, 200 duplicate for a known
// task_no (checked before anything else can refuse it), 400 for bad
// input, 409 for a known task_no resent with other content.
func (a *API) submit(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
	rec := &statusRecorder{ResponseWriter: w}
	w = rec
	defer func() { a.opts.Metrics.Submit(submitResult(rec.status)) }()
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf("the request is over %d bytes; a job's payload or document is at most 1 MiB", maxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, CodeBadJSON, "the request body could not be read: "+err.Error())
		return
	}
	var b submitBody
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			writeError(w, http.StatusBadRequest, CodeUnknownField, "unknown field "+f+"; the fields are task_no, printer, priority, payload, document, timeout")
			return
		}
		writeError(w, http.StatusBadRequest, CodeBadJSON, "the body is not a job object: "+err.Error())
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, CodeBadJSON, "the body has data after the job object")
		return
	}
	if err := checkTaskNo(b.TaskNo); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidTask, err.Error())
		return
	}
	// A known task_no is answered as the duplicate it is before any other
	// check can refuse it (DESIGN.md invariant 7).
	payload, payloadErr := decodePayload(b.Payload)
	digest := ""
	if payloadErr == nil {
		digest = contentDigest(payload, b.Document)
	}
	if t, err := a.st.Task(r.Context(), st.ID, b.TaskNo); err == nil {
		a.answerDuplicate(w, t, b.Printer, digest)
		return
	} else if !errors.Is(err, store.ErrNotFound) {
		a.internal(w, "read a task", err)
		return
	}
	if code, msg := checkJob(&b, payload, payloadErr); code != "" {
		status := http.StatusBadRequest
		if code == CodePayloadTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, code, msg)
		return
	}
	job := wire.Job{TaskNo: b.TaskNo, Printer: b.Printer, Payload: payload, Timeout: b.Timeout}
	setPriority(&job, b.Priority)
	if b.Document != nil {
		job.Document = compact(b.Document)
	}
	t, err := a.st.Submit(r.Context(), st, job, digest, a.opts.Clock.Now().UTC())
	var quota *store.QuotaError
	switch {
	case errors.Is(err, store.ErrDuplicate):
		a.answerDuplicate(w, t, b.Printer, digest)
		return
	case errors.As(err, &quota):
		a.lines.Warn(a.log, "hub api: job quota reached", "store", st.ID, "err", quota)
		w.Header().Set("Retry-After", "3600")
		if quota.Tenant {
			writeError(w, http.StatusTooManyRequests, CodeTenantQuota, fmt.Sprintf("your tenant holds %d jobs, the most the hub's max_jobs_per_tenant allows; nothing was stored: jobs leave the hub when the retention after their last change ends, or its operator raises max_jobs_per_tenant", quota.Jobs))
		} else {
			writeError(w, http.StatusInsufficientStorage, CodeStoreQuota, fmt.Sprintf("store %s holds %d jobs, the most the hub's max_jobs_per_store allows; nothing was stored: jobs leave the hub when the retention after their last change ends, or its operator raises max_jobs_per_store", st.ID, quota.Jobs))
		}
		return
	case errors.Is(err, store.ErrFull):
		a.lines.Log(a.log, slog.LevelError, "hub api: storage full", "store", st.ID, "err", err)
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusInsufficientStorage, CodeStorageFull, "the hub's storage limit is reached; nothing was stored: retry later (the operator raises max_store_mb or shortens retention)")
		return
	case err != nil:
		a.internal(w, "store a job", err)
		return
	}
	a.log.Info("hub api: job stored", "store", st.ID, "task_no", b.TaskNo, "printer", b.Printer)
	writeJSON(w, http.StatusAccepted, submitAnswer{TaskNo: t.TaskNo, Store: st.ID, State: t.State})
}

// statusRecorder notes the status a handler answered, for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// submitResult names a submit's answer for the metrics.
func submitResult(status int) string {
	switch {
	case status == http.StatusAccepted:
		return "stored"
	case status == http.StatusOK:
		return "duplicate"
	case status >= 500:
		return "failed"
	}
	return "refused"
}

// answerDuplicate answers a known task_no: 200 with its current state, or
// 409 when the resend names another printer or carries other content
// (DESIGN.md invariant 12: a duplicate is the same ticket).
func (a *API) answerDuplicate(w http.ResponseWriter, t store.Task, printer, digest string) {
	if t.Origin == "cloud" && (printer != "" && printer != t.Job.Printer || digest != "" && t.SHA256 != "" && digest != t.SHA256) {
		writeError(w, http.StatusConflict, CodeConflict, fmt.Sprintf("task_no %s is already stored for this store with another printer or content; a resend must be the same job, a new ticket needs a new task_no (e.g. _v2)", t.TaskNo))
		return
	}
	writeJSON(w, http.StatusOK, submitAnswer{TaskNo: t.TaskNo, Store: t.Store, State: t.State, Duplicate: true})
}

// checkJob returns the code and message of the first thing wrong with a
// job, or "" when it is one the agent takes.
func checkJob(b *submitBody, payload []byte, payloadErr error) (code, msg string) {
	if err := checkPrinter(b.Printer); err != nil {
		return CodeInvalidTask, err.Error()
	}
	switch b.Priority {
	case "", "normal", "urgent":
	default:
		return CodeInvalidTask, fmt.Sprintf("priority %q is not normal or urgent", b.Priority)
	}
	hasPayload, hasDoc := b.Payload != nil, b.Document != nil
	switch {
	case hasPayload && hasDoc:
		return CodeInvalidTask, "the job has both payload and document; send exactly one"
	case !hasPayload && !hasDoc:
		return CodeInvalidTask, "the job has neither payload (base64 ESC/POS) nor document (ticket lines); send exactly one"
	case hasPayload && payloadErr != nil:
		return CodeBadPayload, payloadErr.Error()
	case hasPayload && len(payload) == 0:
		return CodeInvalidTask, "payload is empty; it carries the ESC/POS bytes as base64"
	case hasPayload && len(payload) > maxTaskBytes:
		return CodePayloadTooLarge, fmt.Sprintf("the payload is %d bytes; the limit is %d", len(payload), maxTaskBytes)
	case hasDoc && len(b.Document) > maxTaskBytes:
		return CodePayloadTooLarge, fmt.Sprintf("the document is %d bytes; the limit is %d", len(b.Document), maxTaskBytes)
	case hasDoc:
		if _, err := escpos.ParseDocument(b.Document); err != nil {
			return CodeBadDocument, err.Error()
		}
	}
	if err := checkTimeout(b.Timeout); err != nil {
		return CodeBadTimeout, err.Error()
	}
	return "", ""
}

// setPriority sets a checked priority on a job. The field's type is the
// spool's, which the hub does not import (deps_test: the hub links the
// wire, not the agent's storage), so the value goes through its JSON form.
func setPriority(j *wire.Job, p string) {
	if p != "" {
		quoted, _ := json.Marshal(p)
		json.Unmarshal(quoted, &j.Priority)
	}
}

// decodePayload reads a base64 payload; nil when there is none.
func decodePayload(p *string) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(*p)
	if err != nil {
		return nil, fmt.Errorf("payload is not base64: %v", err)
	}
	return b, nil
}

// contentDigest is the hex SHA-256 of what the job prints: the payload
// bytes, or the document with insignificant space removed, so a resend
// that only reformats the JSON is the same ticket.
func contentDigest(payload []byte, doc json.RawMessage) string {
	var sum [32]byte
	switch {
	case payload != nil:
		sum = sha256.Sum256(payload)
	case doc != nil:
		sum = sha256.Sum256(compact(doc))
	default:
		return ""
	}
	return hex.EncodeToString(sum[:])
}

func compact(doc json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		return doc
	}
	return buf.Bytes()
}

// jobView is the answer of GET /v1/stores/{store}/jobs/{task_no}.
type jobView struct {
	TaskNo            string        `json:"task_no"`
	Store             string        `json:"store"`
	State             string        `json:"state"`
	Reason            string        `json:"reason,omitempty"`
	Error             *wire.Problem `json:"error,omitempty"`
	Printer           string        `json:"printer,omitempty"`
	Target            string        `json:"target,omitempty"`
	Confirmation      string        `json:"confirmation,omitempty"`
	Attempts          int           `json:"attempts"`
	PossibleDuplicate bool          `json:"possible_duplicate"`
	Origin            string        `json:"origin,omitempty"`
	Submitted         *time.Time    `json:"submitted,omitempty"`
	Acked             *time.Time    `json:"acked,omitempty"`
	AckResult         string        `json:"ack_result,omitempty"`
	Updated           time.Time     `json:"updated"`
	Timeline          []store.Entry `json:"timeline,omitempty"`
	DroppedEvents     int           `json:"dropped_events,omitempty"`
}

func (a *API) getJob(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
	no := r.PathValue("task_no")
	if err := checkTaskNo(no); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidTask, err.Error())
		return
	}
	t, err := a.st.Task(r.Context(), st.ID, no)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("store %s has no job %s (jobs are kept for the retention window after their last change)", st.ID, no))
		return
	}
	if err != nil {
		a.internal(w, "read a task", err)
		return
	}
	writeJSON(w, http.StatusOK, view(t))
}

// view is a task as the API shows it.
func view(t store.Task) jobView {
	v := jobView{TaskNo: t.TaskNo, Store: t.Store, State: t.State, Reason: t.Reason, Error: t.Error, Printer: t.Printer,
		Target: t.Target, Confirmation: t.Confirmation, Attempts: t.Attempts, PossibleDuplicate: t.PossibleDuplicate,
		Origin: t.Origin, AckResult: t.AckResult, Updated: t.Updated, Timeline: t.Timeline, DroppedEvents: t.Dropped}
	if !t.Submitted.IsZero() {
		v.Submitted = &t.Submitted
	}
	if !t.Acked.IsZero() {
		v.Acked = &t.Acked
	}
	if v.Timeline == nil {
		v.Timeline = []store.Entry{}
	}
	return v
}

// storeView is the answer of GET /v1/stores/{store} and an entry of GET
// /v1/stores.
type storeView struct {
	Store string `json:"store"`
	Name  string `json:"name,omitempty"`
	agentlink.AgentStatus
	// Backlog is how many jobs no agent has acknowledged; Oldest the first
	// of them.
	Backlog int         `json:"backlog"`
	Oldest  *oldestView `json:"oldest_waiting,omitempty"`
}

type oldestView struct {
	TaskNo    string    `json:"task_no"`
	Submitted time.Time `json:"submitted"`
}

func (a *API) view(ctx context.Context, st store.StoreInfo) (storeView, error) {
	v := storeView{Store: st.ID, Name: st.Name}
	if a.opts.Link != nil {
		v.AgentStatus, _ = a.opts.Link.Status(st.ID)
	}
	if v.Printers == nil {
		v.Printers = []wire.Printer{}
	}
	pending, err := a.st.Pending(ctx, st.ID)
	if err != nil {
		return v, err
	}
	v.Backlog = len(pending)
	for _, no := range pending {
		if t, err := a.st.Task(ctx, st.ID, no); err == nil && t.AckResult == "" {
			v.Oldest = &oldestView{TaskNo: no, Submitted: t.Submitted}
			break
		}
	}
	return v, nil
}

func (a *API) getStore(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
	v, err := a.view(r.Context(), st)
	if err != nil {
		a.internal(w, "read the store's backlog", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// listStores answers the key's tenant's stores with their agents.
func (a *API) listStores(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	key, ok := a.checkKey(w, r)
	if !ok {
		return
	}
	stores, err := a.st.Stores(ctx, key.Tenant)
	if err != nil {
		a.internal(w, "list the stores", err)
		return
	}
	out := []storeView{}
	for _, st := range stores {
		v, err := a.view(ctx, st)
		if err != nil {
			a.internal(w, "read a store's backlog", err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"stores": out})
}

// commandView is the answer of the command routes.
type commandView struct {
	ID       string              `json:"id"`
	Type     string              `json:"type"`
	TaskNo   string              `json:"task_no"`
	Asked    time.Time           `json:"asked"`
	Sent     int                 `json:"sent"`
	Result   *wire.CommandResult `json:"result,omitempty"`
	Answered *time.Time          `json:"answered,omitempty"`
}

func viewCommand(c store.Command) commandView {
	v := commandView{ID: c.ID, Type: c.Type, TaskNo: c.TaskNo, Asked: c.Asked, Sent: c.Sent, Result: c.Result}
	if !c.At.IsZero() {
		v.Answered = &c.At
	}
	return v
}

// command sends a reprint or cancel of a task to the store's agent under
// the caller's id: the same id again is the same command (answered with
// its result once the agent gave it, else sent again: the agent runs an id
// once). 202 sent, 200 with the agent's result, 409 not_connected when the
// store's agent is offline (the command is recorded, not sent: retry later
// with the same id).
func (a *API) command(typ string) handler {
	return func(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
		no := r.PathValue("task_no")
		if err := checkTaskNo(no); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidTask, err.Error())
			return
		}
		var b struct {
			ID string `json:"id"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			writeError(w, http.StatusBadRequest, CodeBadJSON, `the body must be {"id": "<your command id>"}: `+err.Error())
			return
		}
		if err := checkTaskNo(b.ID); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidCommand, "id: "+strings.Replace(err.Error(), "task_no", "the id", 1)+"; give every new command a new id, and resend a command under its id")
			return
		}
		c, outcome, err := a.Command(r.Context(), st, typ, no, b.ID)
		switch {
		case err != nil:
			a.internal(w, "record a command", err)
		case outcome == CommandConflict:
			writeError(w, http.StatusConflict, CodeConflict, fmt.Sprintf("id %s is the %s of %s; give a new command a new id", b.ID, c.Type, c.TaskNo))
		case outcome == CommandAnswered:
			writeJSON(w, http.StatusOK, viewCommand(c))
		case outcome == CommandNotConnected:
			writeError(w, http.StatusConflict, CodeNotConnected, "the store's agent is not connected; retry with the same id when it is online")
		default:
			writeJSON(w, http.StatusAccepted, viewCommand(c))
		}
	}
}

func (a *API) getCommand(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
	c, err := a.st.CommandOf(r.Context(), st.ID, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, CodeNotFound, "store "+st.ID+" has no command "+r.PathValue("id"))
		return
	}
	if err != nil {
		a.internal(w, "read a command", err)
		return
	}
	writeJSON(w, http.StatusOK, viewCommand(c))
}

// revoke revokes every device token of the store (its agent goes back to
// pairing): a connected agent gets the revoke frame and is closed, and
// every later handshake with those tokens is refused 401.
func (a *API) revoke(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
	n, err := a.st.RevokeDevices(r.Context(), st.ID)
	if err != nil {
		a.internal(w, "revoke the store's devices", err)
		return
	}
	connected := false
	if a.opts.Link != nil {
		connected = a.opts.Link.Revoke(st.ID, "the store's device tokens were revoked in the hub")
	}
	a.log.Info("hub api: devices revoked", "store", st.ID, "revoked", n, "connected", connected)
	writeJSON(w, http.StatusOK, map[string]any{"store": st.ID, "revoked": n, "connected": connected})
}

// decide approves a pairing code for the store (the agent that shows the
// code gets a device token of this store at its next poll) or refuses it.
func (a *API) decide(approve bool) handler {
	return func(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
		code := r.PathValue("user_code")
		err := a.DecidePairing(r.Context(), st, code, approve)
		var many *TooManyCodesError
		if errors.As(err, &many) {
			w.Header().Set("Retry-After", strconv.Itoa(int(many.Left.Seconds())+1))
			writeError(w, http.StatusTooManyRequests, CodeTooManyRequests,
				"too many unknown pairing codes from your tenant; check the code the agent shows (or scan its QR), and retry after Retry-After seconds")
			return
		}
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, map[string]any{"user_code": store.NormalizeUserCode(code), "store": st.ID, "approved": approve})
		case errors.Is(err, store.ErrNotFound):
			writeError(w, http.StatusNotFound, CodeNotFound, "no pairing code "+code+"; check the code the agent shows, or run printgate pair again")
		case errors.Is(err, store.ErrDecided):
			writeError(w, http.StatusConflict, CodeConflict, "the code "+code+" was already approved, refused or used; run printgate pair again for a new one")
		case errors.Is(err, store.ErrExpiredCode):
			writeError(w, http.StatusGone, CodeExpired, "the code "+code+" expired; run printgate pair again for a new one")
		default:
			a.internal(w, "decide a pairing", err)
		}
	}
}

// listJobs answers a store's jobs in task_no order, without timelines:
// ?state=A,B filters by state, ?after=TASK_NO pages on from a task_no,
// ?limit=N (1-1000, default 100). "next" is the after of the next page,
// absent on the last.
func (a *API) listJobs(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, CodeBadQuery, fmt.Sprintf("limit %q must be a whole number from 1 to 1000", v))
			return
		}
		limit = n
	}
	after := q.Get("after")
	if after != "" {
		if err := checkTaskNo(after); err != nil {
			writeError(w, http.StatusBadRequest, CodeBadQuery, "after: "+err.Error())
			return
		}
	}
	var states []string
	if v := q.Get("state"); v != "" {
		for _, s := range strings.Split(v, ",") {
			s = strings.ToUpper(strings.TrimSpace(s))
			if s == "" || len(s) > 32 || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "" {
				writeError(w, http.StatusBadRequest, CodeBadQuery, fmt.Sprintf("state %q is not a state such as PRINTED or STORED (docs/STATES.md, docs/HUB.md)", s))
				return
			}
			states = append(states, s)
		}
	}
	tasks, next, err := a.st.ListTasks(r.Context(), st.ID, after, states, limit)
	if err != nil {
		a.internal(w, "list the store's jobs", err)
		return
	}
	out := make([]jobView, 0, len(tasks))
	for _, t := range tasks {
		v := view(t)
		v.Timeline = nil
		out = append(out, v)
	}
	ans := map[string]any{"jobs": out}
	if next != "" {
		ans["next"] = next
	}
	writeJSON(w, http.StatusOK, ans)
}

func (a *API) internal(w http.ResponseWriter, what string, err error) {
	a.log.Error("hub api: "+what, "err", err)
	writeError(w, http.StatusInternalServerError, CodeInternal, "the hub failed to "+what+"; the cause is in its log")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]map[string]string{"error": {"code": code, "message": msg}})
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="printgate-hub"`)
	writeError(w, http.StatusUnauthorized, CodeUnauthorized, msg)
}
