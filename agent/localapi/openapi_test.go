package localapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"printgate/agent/localapi"
)

// TestOpenAPIServedWithoutToken: the description is at
// /api/v1/openapi.json for anyone who can reach the API, with no token, and
// it is the embedded JSON (docs/openapi.yaml converted; internal/apispec
// keeps them identical), which describes its own route.
func TestOpenAPIServedWithoutToken(t *testing.T) {
	c := newAPI(t, newFake(), localapi.Options{})
	c.auth = ""
	a := c.do(http.MethodGet, localapi.OpenAPIPath, "")
	if a.status != http.StatusOK {
		t.Fatalf("GET %s without a token: %d %s", localapi.OpenAPIPath, a.status, a.body)
	}
	if !bytes.Equal(a.body, localapi.OpenAPI()) {
		t.Fatal("the served description is not the embedded one")
	}
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	a.decode(t, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	for _, p := range []string{"/api/v1/tasks", "/api/v1/tasks/{task_no}", "/api/v1/tasks/{task_no}/payload",
		"/api/v1/tasks/{task_no}/reprint", "/api/v1/tasks/{task_no}/cancel", "/api/v1/printers",
		"/api/v1/reload", "/api/v1/logs", localapi.OpenAPIPath, "/healthz", "/metrics"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("the description has no path %s", p)
		}
	}
	if len(doc.Paths) != 11 {
		t.Errorf("the description has %d paths, want the 11 of PROTOCOL.md §3", len(doc.Paths))
	}
	// The other routes still want the token.
	if a := c.do(http.MethodGet, "/api/v1/printers", ""); a.status != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/printers without a token: %d", a.status)
	}
	if a := c.do(http.MethodPost, localapi.OpenAPIPath, ""); a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST %s: %d Allow %q, want 405 GET, HEAD", localapi.OpenAPIPath, a.status, a.header.Get("Allow"))
	}
}
