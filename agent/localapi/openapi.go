package localapi

import (
	_ "embed" // the description, served as is
	"net/http"
	"strconv"
)

// OpenAPIPath is where the agent serves the description of this API.
const OpenAPIPath = "/api/v1/openapi.json"

// openAPIJSON is docs/openapi.yaml as JSON, generated from it (a test in
// internal/apispec keeps them identical). It describes the API only: no
// token, address or other part of any agent's config is in it, which is
// why it is served without the token.
//
//go:embed openapi.json
var openAPIJSON []byte

// OpenAPI returns the OpenAPI 3.1 description of the local API as JSON,
// for tools (and the tests) that want it without a running agent.
func OpenAPI() []byte {
	return append([]byte(nil), openAPIJSON...)
}

// serveOpenAPI is GET /api/v1/openapi.json, for a POS integrator's client
// generator; no token, since it holds nothing secret.
func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openAPIJSON)))
	h.Set("X-Content-Type-Options", "nosniff")
	// It changes only with the binary; a client may keep it but asks again.
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(openAPIJSON)
	}
}
