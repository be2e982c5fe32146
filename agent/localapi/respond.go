package localapi

import (
	"encoding/json"
	"net/http"
)

// writeJSON answers with status and v as JSON. Every API answer goes
// through here (or writeError), so every one carries the same headers: the
// content type, nosniff so a browser never runs an answer as something else,
// and no-store because task states change under a cache.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unmarshalable type) gets here.
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal","message":"the agent could not encode its answer; see the agent log"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
