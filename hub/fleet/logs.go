package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"printgate/hub/agentlink"
	"printgate/hub/api"
	"printgate/hub/store"
	"printgate/sync/wire"
)

// logTailLines is how many recent lines the page's log tail shows first.
const logTailLines = 100

// maxLogLines bounds the lines the page's script keeps on screen; older
// ones leave as new ones come.
const maxLogLines = 1000

// logsData is the log tail page's content.
type logsData struct {
	Store  store.StoreInfo
	Online bool
	Level  string
	Levels []string
	// Stream is the address of the page's server-sent events; empty when
	// the agent is offline (the page opens no stream then).
	Stream  string
	Path    string
	Max     int
	Minutes int
}

// logLevel is the ?level= of the log tail: empty, or one of wire.LogLevels.
func logLevel(r *http.Request) (string, bool) {
	v := r.URL.Query().Get("level")
	return v, v == "" || slices.Contains(wire.LogLevels, v)
}

// logsPage is a store's agent's log: the page's script streams it from
// logsStream while the page is open.
func (p *Page) logsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	st, err := p.tenantStore(r.Context(), sess, r.PathValue("store"))
	if errors.Is(err, store.ErrNotFound) {
		p.notFound(w, r)
		return
	}
	if err != nil {
		p.serverError(w, r, sess, "what.fleet", err)
		return
	}
	level, ok := logLevel(r)
	if !ok {
		level = ""
	}
	path := fmt.Sprintf("%s/stores/%s/logs", Prefix, st.ID)
	d := logsData{Store: st, Level: level, Levels: wire.LogLevels, Path: path, Max: maxLogLines,
		Minutes: int(api.DefaultTailLimit.Minutes())}
	if p.opts.Link != nil {
		s, _ := p.opts.Link.Status(st.ID)
		d.Online = s.Online
	}
	if d.Online {
		d.Stream = path + "/stream"
		if level != "" {
			d.Stream += "?level=" + level
		}
	}
	v := p.newView(r, sess)
	v.Title = v.L.T("logs.title", st.ID)
	v.Data = d
	p.render(w, http.StatusOK, "logs.html", "layout", v)
}

// logsStream streams the store's agent's log to the page's script as
// server-sent events, through the order API's log tail (api.OpenTail:
// the same bounds, the same events). A tail that cannot start is one end
// event with its reason, which an EventSource can read (it reads no body
// of an answer other than 200).
func (p *Page) logsStream(w http.ResponseWriter, r *http.Request, sess *session) {
	// Each tail costs the store's agent a stream: only the page's own
	// script starts one. The session cookie (SameSite=Strict) already
	// stays home on a request another site makes; this refuses what a
	// browser marks as sent from elsewhere all the same.
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		plain(w, http.StatusForbidden, "The log tail opens only from the fleet page itself. Open the store's log there.")
		return
	}
	st, err := p.tenantStore(r.Context(), sess, r.PathValue("store"))
	if errors.Is(err, store.ErrNotFound) {
		plain(w, http.StatusNotFound, "there is no such store here")
		return
	}
	if err != nil {
		p.log.Error("fleet page: read the store for a log tail", "err", err)
		plain(w, http.StatusServiceUnavailable, "the hub cannot read the store now; open the log again in a minute")
		return
	}
	level, ok := logLevel(r)
	if !ok {
		plain(w, http.StatusBadRequest, "unknown log level; choose one on the page")
		return
	}
	if r.Method == http.MethodHead {
		// A HEAD starts no tail: it would stream into nothing until its
		// limit.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		return
	}
	tail, err := p.opts.Actions.OpenTail(st, agentlink.TailOptions{Lines: logTailLines, Level: level})
	switch {
	case errors.Is(err, agentlink.ErrNotConnected):
		refuseTail(w, "agent_offline")
		return
	case errors.Is(err, api.ErrTenantTails), errors.Is(err, agentlink.ErrTooManyTails):
		refuseTail(w, "too_many_tails")
		return
	case err != nil:
		p.log.Error("fleet page: start a log tail", "store", st.ID, "err", err)
		plain(w, http.StatusServiceUnavailable, "the hub cannot start the log tail now; open the log again in a minute")
		return
	}
	p.log.Info("fleet page: log tail", "tenant", sess.tenant, "user", sess.user, "store", st.ID, "level", level)
	tail.Stream(w, r)
}

// refuseTail answers a log tail that did not start: a stream of one end
// event with the reason, as the tail's own end says it.
func refuseTail(w http.ResponseWriter, reason string) {
	b, _ := json.Marshal(map[string]any{"reason": reason, "dropped": 0})
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: end\ndata: %s\n\n", b)
}
