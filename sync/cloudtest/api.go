package cloudtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"printgate/sync/wire"
)

// maxAPIBody bounds a test API request body: a job frame at most.
const maxAPIBody = wire.MaxFrameBytes

// routeAPI adds the test API of PROTOCOL.md §7. Every answer is JSON;
// errors are {"error":{"code","message"}} as in §3.
func (c *Cloud) routeAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/agents", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"agents": c.Agents()})
	})
	mux.HandleFunc("POST /api/agents/{agent_id}/jobs", c.serveQueue)
	mux.HandleFunc("GET /api/agents/{agent_id}/jobs", func(w http.ResponseWriter, r *http.Request) {
		jobs := c.Jobs(r.PathValue("agent_id"))
		if jobs == nil {
			jobs = []QueuedJob{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
	})
	mux.HandleFunc("GET /api/agents/{agent_id}/events", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("agent_id")
		evs := c.Events(id)
		if evs == nil {
			evs = []wire.Event{}
		}
		dropped := read(c, id, func(a *agent) int { return a.dropped })
		writeJSON(w, http.StatusOK, map[string]any{"events": evs, "dropped": dropped, "gaps": orEmpty(c.Gaps(id))})
	})
	mux.HandleFunc("GET /api/agents/{agent_id}/acks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"acks": orEmpty(c.Acks(r.PathValue("agent_id")))})
	})
	mux.HandleFunc("POST /api/agents/{agent_id}/commands", c.serveCommand)
	mux.HandleFunc("GET /api/agents/{agent_id}/results", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"results": orEmpty(c.Results(r.PathValue("agent_id")))})
	})
	mux.HandleFunc("GET /api/agents/{agent_id}/logs/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"lines": orEmpty(c.LogLines(r.PathValue("agent_id"), r.PathValue("id")))})
	})
	mux.HandleFunc("POST /api/agents/{agent_id}/token", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"access_token": c.IssueToken(r.PathValue("agent_id")), "token_type": "Bearer"})
	})
	mux.HandleFunc("POST /api/agents/{agent_id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"revoked": c.RevokeAgent(r.PathValue("agent_id"))})
	})
	mux.HandleFunc("POST /api/connections/drop", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"dropped": c.DropAll()})
	})
	mux.HandleFunc("POST /api/connections/refuse", func(w http.ResponseWriter, r *http.Request) {
		on, err := strconv.ParseBool(r.URL.Query().Get("on"))
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_query", "on must be true or false")
			return
		}
		c.SetRefusing(on)
		writeJSON(w, http.StatusOK, map[string]any{"refusing": on})
	})
}

// serveQueue queues a job: the body is a job frame's fields (§5), with or
// without its "type".
func (c *Cloud) serveQueue(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAPIBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", err.Error())
		return
	}
	m, err := wire.Decode(withType(body, wire.TypeJob))
	if err != nil {
		writeGoError(w, err)
		return
	}
	job, ok := m.(*wire.Job)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("the body is a %s frame, not a job", m.Type()))
		return
	}
	id := r.PathValue("agent_id")
	if err := c.Queue(id, *job); err != nil {
		writeGoError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"task_no": job.TaskNo, "queued": len(c.Jobs(id)), "connected": c.Connected(id)})
}

// serveCommand sends a command frame (reprint, cancel, logs_tail,
// logs_stop, with its "type" and "id") to a connected agent.
func (c *Cloud) serveCommand(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAPIBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", err.Error())
		return
	}
	m, err := wire.Decode(body)
	if err != nil {
		writeGoError(w, err)
		return
	}
	if err := c.Send(r.PathValue("agent_id"), m); err != nil {
		writeGoError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"type": m.Type()})
}

// withType puts "type": typ first in a JSON object that has no "type" at
// its top level, so a job can be posted with the intake's fields alone;
// anything else is returned as it is, for Decode to judge.
func withType(body []byte, typ string) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	if _, ok := top["type"]; ok {
		return body
	}
	rest := bytes.TrimLeft(body, " \t\r\n")[1:] // after '{'
	head := `{"type":` + strconv.Quote(typ)
	if t := bytes.TrimLeft(rest, " \t\r\n"); len(t) > 0 && t[0] != '}' {
		head += ","
	}
	return append([]byte(head), rest...)
}

// writeGoError answers err with the status its sentinel calls for.
func writeGoError(w http.ResponseWriter, err error) {
	var fe *wire.FrameError
	switch {
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, fe.Code, fe.Error())
	case errors.Is(err, ErrNotCommand):
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
	case errors.Is(err, ErrNotConnected):
		writeError(w, http.StatusConflict, "not_connected", err.Error())
	case errors.Is(err, ErrQueueFull):
		writeError(w, http.StatusTooManyRequests, "queue_full", err.Error())
	case errors.Is(err, ErrUnknownUserCode):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, ErrExpired):
		writeError(w, http.StatusGone, "expired", err.Error())
	case errors.Is(err, ErrDecided):
		writeError(w, http.StatusConflict, "conflict", err.Error())
	case errors.Is(err, ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"could not encode the answer"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// writeError answers {"error":{"code","message"}}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// writeOAuthJSON answers an OAuth endpoint (RFC 6749 §5.1: no-store).
func writeOAuthJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, v)
}

// oauthError answers an OAuth error (RFC 6749 §5.2, RFC 8628 §3.5).
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeOAuthJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// orEmpty makes a nil list encode as [].
func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
