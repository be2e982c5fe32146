package localapi

import (
	"net/http"
	"printgate/agent/api"
	"strconv"
)

// CodeNoPayload is the error code of GET /api/v1/tasks/{task_no}/payload
// for a task that was submitted as a ticket document: it has no raw bytes
// to give back (404). It differs from not_found so a client can say
// "preview the document instead" rather than "no such task".
const CodeNoPayload = "no_payload"

// payload is GET /api/v1/tasks/{task_no}/payload: the raw ESC/POS bytes a
// POS submitted, exactly as stored, for support to see what the POS sent
// (`printgate decode --task`). It is the one answer that carries a payload:
// the payload may hold customer data, so it is behind the token like every
// /api/ route (whoever holds the token can submit tickets anyway), and
// proxies and browsers are told not to keep it.
func (s *server) payload(w http.ResponseWriter, r *http.Request) {
	t, ok := s.pathTask(w, r)
	if !ok {
		return
	}
	switch {
	case t.Reclaimed:
		s.fail(w, r, newError(http.StatusGone, api.CodePruned, "task %q lost its payload before its retention window ended: it had finished and the spool needed the room for new tickets (it was full)", t.TaskNo))
		return
	case t.Pruned:
		s.fail(w, r, newError(http.StatusGone, api.CodePruned, "task %q finished longer ago than the retention window and its payload was deleted", t.TaskNo))
		return
	case len(t.Payload) == 0:
		s.fail(w, r, newError(http.StatusNotFound, CodeNoPayload, "task %q was submitted as a ticket document, not a raw payload; `printgate render` previews documents", t.TaskNo))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(t.Payload)))
	h.Set("Content-Disposition", `attachment; filename="`+t.TaskNo+`.bin"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(t.Payload)
	}
}
