// Package testapi is the optional test API of PROTOCOL.md §7 on the hub,
// so that `printgate cloudcheck` can drive the hub as a store and a
// manager would (issue a device token, queue a job, send a command,
// revoke) and read what the hub recorded. It hands device tokens to
// whoever asks: the hub mounts it only when its config says test_api =
// true, for a staging hub, never by default.
//
// Each agent id gets a store of its own in the tenant "testapi". Jobs,
// acks and events go through the hub's real record and link; the lists
// this API answers (acks, events in arrival order, command results, log
// lines) are kept in memory, bounded, and start empty after a restart.
package testapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"printgate/hub/agentlink"
	"printgate/hub/store"
	"printgate/sync/wire"
)

// Tenant is the tenant the test API's stores belong to.
const Tenant = "testapi"

// maxRecords bounds each recorded list per agent, as the reference cloud's.
const maxRecords = 100_000

// API is the test API. It is also the link's Observer.
type API struct {
	st   *store.Store
	link *agentlink.Server
	log  *slog.Logger
	mux  *http.ServeMux

	mu      sync.Mutex
	agents  map[string]*record // by agent id
	byStore map[string]string  // store -> agent id
}

// record is what the API recorded of one agent.
type record struct {
	store    string
	connects int
	sends    map[string]int
	acks     []wire.JobAck
	events   []wire.Event
	results  []wire.CommandResult
	logs     map[string][]string
}

var _ agentlink.Observer = (*API)(nil)

// New makes the test API; Attach gives it the link before it serves.
func New(st *store.Store, log *slog.Logger) *API {
	a := &API{st: st, log: log, mux: http.NewServeMux(), agents: map[string]*record{}, byStore: map[string]string{}}
	a.mux.HandleFunc("GET /api/agents", a.listAgents)
	a.mux.HandleFunc("POST /api/agents/{id}/token", a.token)
	a.mux.HandleFunc("POST /api/agents/{id}/jobs", a.queue)
	a.mux.HandleFunc("GET /api/agents/{id}/jobs", a.jobs)
	a.mux.HandleFunc("GET /api/agents/{id}/acks", a.list(func(r *record) any { return orEmpty(r.acks) }, "acks"))
	a.mux.HandleFunc("GET /api/agents/{id}/events", a.events)
	a.mux.HandleFunc("POST /api/agents/{id}/commands", a.command)
	a.mux.HandleFunc("GET /api/agents/{id}/results", a.list(func(r *record) any { return orEmpty(r.results) }, "results"))
	a.mux.HandleFunc("GET /api/agents/{id}/logs/{tail}", a.logLines)
	a.mux.HandleFunc("POST /api/agents/{id}/revoke", a.revoke)
	a.mux.HandleFunc("POST /oauth/device/approve", a.decide("approve"))
	a.mux.HandleFunc("POST /oauth/device/deny", a.decide("deny"))
	a.mux.HandleFunc("POST /oauth/device/expire", a.decide("expire"))
	return a
}

// Attach gives the API the link it sends commands and revocations on.
func (a *API) Attach(link *agentlink.Server) { a.link = link }

// ServeHTTP serves the routes under /api/.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// StoreOf is the store the test API gives an agent id: ids are free text,
// store ids are not, so it is derived from a hash.
func StoreOf(agentID string) string {
	sum := sha256.Sum256([]byte(agentID))
	return "t-" + hex.EncodeToString(sum[:10])
}

// ensure makes the tenant, the agent's store and its record.
func (a *API) ensure(ctx context.Context, agentID string) (store.StoreInfo, error) {
	id := StoreOf(agentID)
	a.mu.Lock()
	if a.agents[agentID] == nil {
		a.agents[agentID] = &record{store: id, sends: map[string]int{}, logs: map[string][]string{}}
		a.byStore[id] = agentID
	}
	a.mu.Unlock()
	return a.ensureStore(ctx, id, agentID)
}

// ensureStore makes the test tenant and store id unless they exist.
func (a *API) ensureStore(ctx context.Context, id, name string) (store.StoreInfo, error) {
	if st, err := a.st.StoreInfo(ctx, id); err == nil {
		return st, nil
	}
	if _, err := a.st.AddTenant(ctx, Tenant, "cloudcheck's agents"); err != nil && !errors.Is(err, store.ErrExists) {
		return store.StoreInfo{}, err
	}
	st, err := a.st.AddStore(ctx, Tenant, id, name)
	if errors.Is(err, store.ErrExists) {
		return a.st.StoreInfo(ctx, id)
	}
	return st, err
}

func (a *API) listAgents(w http.ResponseWriter, r *http.Request) {
	type agentView struct {
		AgentID  string `json:"agent_id"`
		Store    string `json:"store"`
		Connect  bool   `json:"connected"`
		Connects int    `json:"connects"`
		Events   int    `json:"events"`
	}
	a.mu.Lock()
	out := []agentView{}
	for id, rec := range a.agents {
		out = append(out, agentView{AgentID: id, Store: rec.store, Connects: rec.connects, Events: len(rec.events)})
	}
	a.mu.Unlock()
	for i := range out {
		out[i].Connect = a.link != nil && a.link.IsConnected(out[i].Store)
	}
	slices.SortFunc(out, func(x, y agentView) int {
		if x.AgentID < y.AgentID {
			return -1
		}
		if x.AgentID > y.AgentID {
			return 1
		}
		return 0
	})
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

func (a *API) token(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := a.ensure(r.Context(), id)
	if err != nil {
		a.fail(w, err)
		return
	}
	_, tok, err := a.st.AddDevice(r.Context(), st.ID, id)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer"})
}

func (a *API) queue(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxFrameBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", err.Error())
		return
	}
	m, err := wire.Decode(withType(body, wire.TypeJob))
	if err != nil {
		var fe *wire.FrameError
		code := wire.CodeBadJSON
		if errors.As(err, &fe) {
			code = fe.Code
		}
		writeError(w, http.StatusBadRequest, code, err.Error())
		return
	}
	job, ok := m.(*wire.Job)
	if !ok {
		writeError(w, http.StatusBadRequest, wire.CodeInvalid, "the body is a "+m.Type()+" frame; a job is wanted")
		return
	}
	st, err := a.ensure(r.Context(), id)
	if err != nil {
		a.fail(w, err)
		return
	}
	if _, err := a.st.Submit(r.Context(), st, *job, "", time.Now().UTC()); err != nil && !errors.Is(err, store.ErrDuplicate) {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"task_no": job.TaskNo, "queued": true, "connected": a.link != nil && a.link.IsConnected(st.ID)})
}

func (a *API) jobs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st := StoreOf(id)
	pending, err := a.st.Pending(r.Context(), st)
	if err != nil {
		a.fail(w, err)
		return
	}
	type queued struct {
		Job   wire.Job `json:"job"`
		Sends int      `json:"sends"`
	}
	out := []queued{}
	for _, no := range pending {
		j, err := a.st.PendingJob(r.Context(), st, no)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			a.fail(w, err)
			return
		}
		a.mu.Lock()
		sends := 0
		if rec := a.agents[id]; rec != nil {
			sends = rec.sends[no]
		}
		a.mu.Unlock()
		out = append(out, queued{Job: j, Sends: sends})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

// gap is a run of n missing from a task's recorded events.
type gap struct {
	TaskNo string `json:"task_no"`
	From   int    `json:"from"`
	To     int    `json:"to"`
}

func (a *API) events(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	var evs []wire.Event
	if rec := a.agents[r.PathValue("id")]; rec != nil {
		evs = slices.Clone(rec.events)
	}
	a.mu.Unlock()
	ns := map[string][]int{}
	var order []string
	for _, e := range evs {
		if _, seen := ns[e.TaskNo]; !seen {
			order = append(order, e.TaskNo)
		}
		ns[e.TaskNo] = append(ns[e.TaskNo], e.N)
	}
	gaps := []gap{}
	for _, no := range order {
		list := ns[no]
		slices.Sort(list)
		next := 1
		for _, n := range list {
			if n > next {
				gaps = append(gaps, gap{TaskNo: no, From: next, To: n - 1})
			}
			next = n + 1
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": orEmpty(evs), "dropped": 0, "gaps": gaps})
}

func (a *API) command(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxFrameBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", err.Error())
		return
	}
	m, err := wire.Decode(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, wire.CodeInvalid, err.Error())
		return
	}
	switch m.(type) {
	case *wire.Reprint, *wire.Cancel, *wire.LogsTail, *wire.LogsStop:
	default:
		writeError(w, http.StatusBadRequest, wire.CodeInvalid, "a command is a reprint, cancel, logs_tail or logs_stop frame, not "+m.Type())
		return
	}
	if err := a.link.Send(StoreOf(r.PathValue("id")), m); err != nil {
		writeError(w, http.StatusConflict, "not_connected", err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"type": m.Type()})
}

func (a *API) logLines(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	var lines []string
	if rec := a.agents[r.PathValue("id")]; rec != nil {
		lines = slices.Clone(rec.logs[r.PathValue("tail")])
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"lines": orEmpty(lines)})
}

func (a *API) revoke(w http.ResponseWriter, r *http.Request) {
	st := StoreOf(r.PathValue("id"))
	n, err := a.st.RevokeDevices(r.Context(), st)
	if err != nil {
		a.fail(w, err)
		return
	}
	a.link.Revoke(st, "revoked through the test API")
	writeJSON(w, http.StatusOK, map[string]any{"revoked": n})
}

// decide approves (for a new store of the test tenant), denies or expires
// a pairing code, as a manager scanning the agent's QR would.
func (a *API) decide(verb string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		code := r.URL.Query().Get("user_code")
		ctx, now := r.Context(), time.Now().UTC()
		var err error
		switch verb {
		case "approve":
			var st store.StoreInfo
			if st, err = a.ensureStore(ctx, "p-"+strings.ToLower(store.NormalizeUserCode(code)), "paired "+code); err == nil {
				err = a.st.DecidePairing(ctx, code, true, st, now)
			}
		case "deny":
			err = a.st.DecidePairing(ctx, code, false, store.StoreInfo{}, now)
		case "expire":
			err = a.st.ExpirePairing(ctx, code, now)
		}
		switch {
		case err == nil:
			done := map[string]string{"approve": "approved", "deny": "approved", "expire": "expired"}[verb]
			writeJSON(w, http.StatusOK, map[string]any{"user_code": code, done: verb != "deny"})
		case errors.Is(err, store.ErrNotFound):
			writeError(w, http.StatusNotFound, "not_found", "no such user code")
		case errors.Is(err, store.ErrDecided):
			writeError(w, http.StatusConflict, "conflict", "the code was already decided")
		case errors.Is(err, store.ErrExpiredCode):
			writeError(w, http.StatusGone, "expired", "the code expired")
		default:
			a.fail(w, err)
		}
	}
}

// list answers one recorded list of an agent under name.
func (a *API) list(get func(*record) any, name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		var v any = []any{}
		if rec := a.agents[r.PathValue("id")]; rec != nil {
			v = get(rec)
		}
		body, err := json.Marshal(map[string]any{name: v})
		a.mu.Unlock()
		if err != nil {
			a.fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(body, '\n'))
	}
}

// rec returns the record of the agent owning store, or nil. a.mu must be
// held.
func (a *API) rec(store string) *record {
	if id, ok := a.byStore[store]; ok {
		return a.agents[id]
	}
	return nil
}

// Welcomed counts a connection.
func (a *API) Welcomed(store, agentID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.rec(store); r != nil {
		r.connects++
	}
}

// Sent counts a job's sends.
func (a *API) Sent(store string, job wire.Job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.rec(store); r != nil {
		r.sends[job.TaskNo]++
	}
}

// Acked records a job_ack.
func (a *API) Acked(store string, ack wire.JobAck) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.rec(store); r != nil {
		r.acks = bounded(r.acks, ack)
		delete(r.sends, ack.TaskNo)
	}
}

// Stored records new events in arrival order.
func (a *API) Stored(store string, evs []wire.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.rec(store); r != nil {
		for _, e := range evs {
			r.events = bounded(r.events, e)
		}
	}
}

// Received records command results and log lines.
func (a *API) Received(store string, m wire.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.rec(store)
	if r == nil {
		return
	}
	switch m := m.(type) {
	case *wire.CommandResult:
		r.results = bounded(r.results, *m)
	case *wire.LogLines:
		if len(r.logs) < 64 || r.logs[m.ID] != nil {
			for _, l := range m.Lines {
				r.logs[m.ID] = bounded(r.logs[m.ID], l)
			}
		}
	}
}

func bounded[T any](list []T, v T) []T {
	if len(list) >= maxRecords {
		list = slices.Delete(list, 0, 1)
	}
	return append(list, v)
}

func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// withType adds "type" to a JSON object that lacks it.
func withType(body []byte, typ string) []byte {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return body
	}
	if _, has := probe["type"]; has {
		return body
	}
	t := bytes.TrimSpace(body)
	if len(t) < 2 || t[0] != '{' {
		return body
	}
	rest := bytes.TrimSpace(t[1:])
	prefix := `{"type":"` + typ + `"`
	if len(rest) > 0 && rest[0] != '}' {
		prefix += ","
	}
	return append([]byte(prefix), rest...)
}

func (a *API) fail(w http.ResponseWriter, err error) {
	a.log.Error("hub test API", "err", err)
	writeError(w, http.StatusInternalServerError, "internal", err.Error())
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
