package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"printgate/hub/agentlink"
	"printgate/hub/store"
	"printgate/sync/wire"
)

// Bounds of the log tail route, beside agentlink's per store and per line.
const (
	// DefaultTailLimit is how long one log tail streams; the reader opens
	// a new one to go on.
	DefaultTailLimit = 10 * time.Minute
	// MaxTailsPerTenant bounds the tails a tenant's keys stream at once
	// from this hub node.
	MaxTailsPerTenant = 8
	// tailKeepalive is how often an idle stream gets a comment line, so
	// proxies keep it open.
	tailKeepalive = 15 * time.Second
	// tailDropCheck is how often a stream says how many lines were dropped.
	tailDropCheck = time.Second
)

// Codes of the log tail route.
const (
	// CodeTooManyTails: the store or the tenant streams as many log tails
	// as it may at once.
	CodeTooManyTails = "too_many_tails"
)

// Reasons a log tail's stream ends, in its last event.
const (
	tailEndTimeLimit    = "time_limit"
	tailEndAgentOffline = "agent_offline"
	tailEndAgentRefused = "agent_refused"
)

// logs streams the store's agent's log as server-sent events: ?tail=N
// recent lines first (0-1000, default 100), ?level= the least severe
// wanted, then every new line, until DefaultTailLimit, the agent's
// connection ends or the reader goes away. 409 not_connected when the
// agent is offline; 429 too_many_tails past agentlink.MaxTailsPerStore or
// MaxTailsPerTenant.
func (a *API) logs(w http.ResponseWriter, r *http.Request, st store.StoreInfo) {
	q := r.URL.Query()
	opts := agentlink.TailOptions{Lines: 100}
	for k, v := range q {
		if len(v) != 1 {
			writeError(w, http.StatusBadRequest, CodeBadQuery, fmt.Sprintf("%s is given %d times; give it once", k, len(v)))
			return
		}
		switch k {
		case "tail":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 || n > agentlink.MaxTailLines {
				writeError(w, http.StatusBadRequest, CodeBadQuery, fmt.Sprintf("tail %q must be a whole number of recent lines from 0 to %d", v[0], agentlink.MaxTailLines))
				return
			}
			opts.Lines = n
		case "level":
			if !slices.Contains(wire.LogLevels, v[0]) {
				writeError(w, http.StatusBadRequest, CodeBadQuery, fmt.Sprintf("level %q is not one of %s", v[0], strings.Join(wire.LogLevels, ", ")))
				return
			}
			opts.Level = v[0]
		default:
			writeError(w, http.StatusBadRequest, CodeBadQuery, fmt.Sprintf("unknown parameter %q; the parameters are tail and level", k))
			return
		}
	}
	if a.opts.Link == nil {
		writeError(w, http.StatusConflict, CodeNotConnected, "the store's agent is not connected to the hub; its log can be tailed once it is online (GET /v1/stores/"+st.ID+" says when)")
		return
	}
	if r.Method == http.MethodHead {
		// A HEAD learns whether a tail would start; it starts none (it
		// would stream into nothing until its limit).
		if a.opts.Link.IsConnected(st.ID) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
			return
		}
		writeError(w, http.StatusConflict, CodeNotConnected, "the store's agent is not connected to the hub; its log can be tailed once it is online (GET /v1/stores/"+st.ID+" says when)")
		return
	}
	tail, err := a.OpenTail(st, opts)
	switch {
	case errors.Is(err, agentlink.ErrNotConnected):
		writeError(w, http.StatusConflict, CodeNotConnected, "the store's agent is not connected to the hub; its log can be tailed once it is online (GET /v1/stores/"+st.ID+" says when)")
		return
	case errors.Is(err, ErrTenantTails):
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusTooManyRequests, CodeTooManyTails, fmt.Sprintf("your tenant streams %d log tails from this hub at once, the most it may; close one and retry", MaxTailsPerTenant))
		return
	case errors.Is(err, agentlink.ErrTooManyTails):
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusTooManyRequests, CodeTooManyTails, fmt.Sprintf("store %s's agent already streams %d log tails through the hub; close one and retry", st.ID, agentlink.MaxTailsPerStore))
		return
	case err != nil:
		a.internal(w, "start a log tail", err)
		return
	}
	tail.Stream(w, r)
}

// ErrTenantTails means the tenant already streams MaxTailsPerTenant log
// tails from this hub node.
var ErrTenantTails = fmt.Errorf("the tenant already streams %d log tails from this hub node", MaxTailsPerTenant)

// LogTail is a log tail of a store's agent opened within the order API's
// bounds, for the API's route and the fleet page to stream the same way.
type LogTail struct {
	a    *API
	st   store.StoreInfo
	tail *agentlink.Tail
	once sync.Once
}

// OpenTail starts a log tail of the store's agent within the bounds of
// GET /v1/stores/{store}/logs: MaxTailsPerTenant per tenant (its keys and
// its fleet page users together) and agentlink.MaxTailsPerStore per
// store. It fails with agentlink.ErrNotConnected, ErrTenantTails or
// agentlink.ErrTooManyTails before anything is written, so each caller
// answers in its own way; otherwise Stream (or Close) must follow.
func (a *API) OpenTail(st store.StoreInfo, opts agentlink.TailOptions) (*LogTail, error) {
	if a.opts.Link == nil {
		return nil, agentlink.ErrNotConnected
	}
	if !a.takeTail(st.Tenant) {
		return nil, ErrTenantTails
	}
	tail, err := a.opts.Link.Tail(st.ID, opts)
	if err != nil {
		a.giveTail(st.Tenant)
		return nil, fmt.Errorf("log tail of store %s: %w", st.ID, err)
	}
	a.lines.Log(a.log, slog.LevelInfo, "hub api: log tail started", "store", st.ID, "tail", opts.Lines)
	return &LogTail{a: a, st: st, tail: tail}, nil
}

// Close ends the tail and gives its place back; Stream calls it.
func (t *LogTail) Close() {
	t.once.Do(func() {
		t.tail.Close()
		t.a.giveTail(t.st.Tenant)
	})
}

// Stream writes the tail as server-sent events (line, dropped, end) until
// the API's TailLimit, the agent's connection ends or the reader goes
// away, then closes it.
func (t *LogTail) Stream(w http.ResponseWriter, r *http.Request) {
	defer t.Close()
	a, st, tail := t.a, t.st, t.tail
	// The timers start before the answer does: a reader that saw the
	// headers is on the clock.
	limit := a.opts.Clock.NewTimer(a.opts.TailLimit)
	defer limit.Stop()
	tick := a.opts.Clock.NewTimer(tailDropCheck)
	defer tick.Stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	flush := func() bool { return rc.Flush() == nil }
	if !flush() {
		return
	}
	idle, reported := time.Duration(0), 0
	end := func(reason, msg string) {
		writeEvent(w, "end", mustJSON(map[string]any{"reason": reason, "message": msg, "dropped": tail.Dropped()}))
		flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case line := <-tail.Lines():
			writeEvent(w, "line", line)
			// Lines already waiting go in the same flush.
			for more := true; more; {
				select {
				case line := <-tail.Lines():
					writeEvent(w, "line", line)
				default:
					more = false
				}
			}
			if !flush() {
				return
			}
			idle = 0
		case <-tail.Done():
			for more := true; more; {
				select {
				case line := <-tail.Lines():
					writeEvent(w, "line", line)
				default:
					more = false
				}
			}
			var ae *agentlink.AgentError
			if errors.As(tail.Err(), &ae) {
				end(tailEndAgentRefused, fmt.Sprintf("the agent refused the log tail (%s: %s)", ae.Problem.Code, ae.Problem.Message))
				return
			}
			end(tailEndAgentOffline, "the store's agent went offline; open the tail again once it is back (GET /v1/stores/"+st.ID+")")
			return
		case <-limit.C():
			end(tailEndTimeLimit, fmt.Sprintf("a log tail streams at most %v; open it again to go on", a.opts.TailLimit))
			return
		case <-tick.C():
			tick.Reset(tailDropCheck)
			if d := tail.Dropped(); d > reported {
				reported = d
				writeEvent(w, "dropped", mustJSON(map[string]int{"dropped": d}))
				if !flush() {
					return
				}
				idle = 0
				continue
			}
			if idle += tailDropCheck; idle >= tailKeepalive {
				idle = 0
				fmt.Fprint(w, ": keepalive\n\n")
				if !flush() {
					return
				}
			}
		}
	}
}

// writeEvent writes one server-sent event; a data with line breaks is
// one data field per line, as the format joins them.
func writeEvent(w http.ResponseWriter, event, data string) {
	var b strings.Builder
	b.WriteString("event: ")
	b.WriteString(event)
	b.WriteByte('\n')
	for _, l := range strings.Split(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	w.Write([]byte(b.String()))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// takeTail counts a tail of the tenant; false past MaxTailsPerTenant.
func (a *API) takeTail(tenant string) bool {
	a.tailMu.Lock()
	defer a.tailMu.Unlock()
	if a.tails[tenant] >= MaxTailsPerTenant {
		return false
	}
	a.tails[tenant]++
	return true
}

func (a *API) giveTail(tenant string) {
	a.tailMu.Lock()
	defer a.tailMu.Unlock()
	if a.tails[tenant]--; a.tails[tenant] <= 0 {
		delete(a.tails, tenant)
	}
}
