package localapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"printgate/agent/localapi"
)

// TestPayloadRoute ensures GET /api/v1/tasks/{task_no}/payload needs the
// token, returns the stored bytes exactly as octet-stream that nobody may
// cache, and answers a document task with no_payload, a pruned one with
// pruned, and an unknown one with not_found.
func TestPayloadRoute(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	raw := []byte("\x1b@hello \x00\xff\n\x1dV\x01")
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("RAW_v1", "kitchen", raw)), http.StatusAccepted, "")
	doc := submitBody(map[string]any{"task_no": "DOC_v1", "printer": "kitchen", "document": map[string]any{"lines": []any{map[string]any{"text": "hi"}}}})
	wantStatus(t, c.do("POST", "/api/v1/tasks", doc), http.StatusAccepted, "")

	get := func(path, auth, remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, req)
		return rec
	}
	for i, auth := range []string{"", "Bearer wrong-token"} {
		rec := get("/api/v1/tasks/RAW_v1/payload", auth, fmt.Sprintf("192.0.2.%d:1", 50+i))
		if rec.Code != http.StatusUnauthorized || bytes.Contains(rec.Body.Bytes(), raw) {
			t.Errorf("Authorization %q: %d %q, want 401 without the bytes", auth, rec.Code, rec.Body)
		}
	}

	rec := get("/api/v1/tasks/RAW_v1/payload", "Bearer "+testToken, "192.0.2.60:1")
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || !bytes.Equal(body, raw) {
		t.Fatalf("payload: %d %q, want 200 %q", rec.Code, body, raw)
	}
	for k, want := range map[string]string{
		"Content-Type":           "application/octet-stream",
		"Content-Length":         fmt.Sprint(len(raw)),
		"Cache-Control":          "no-store",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}

	wantStatus(t, c.do("GET", "/api/v1/tasks/DOC_v1/payload", ""), http.StatusNotFound, localapi.CodeNoPayload)
	wantStatus(t, c.do("GET", "/api/v1/tasks/NOPE_v1/payload", ""), http.StatusNotFound, "not_found")
	wantStatus(t, c.do("GET", "/api/v1/tasks/bad%20no/payload", ""), http.StatusBadRequest, "invalid_task")
	a := c.do("POST", "/api/v1/tasks/RAW_v1/payload", "")
	wantStatus(t, a, http.StatusMethodNotAllowed, "method_not_allowed")

	f.mu.Lock()
	f.tasks["RAW_v1"].Payload, f.tasks["RAW_v1"].Pruned = nil, true
	f.mu.Unlock()
	wantStatus(t, c.do("GET", "/api/v1/tasks/RAW_v1/payload", ""), http.StatusGone, "pruned")
}
