package localapi_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
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

// TestOpenAPIListsEveryErrorCode: the description's ErrorCode enum is
// exactly the codes the agent's code defines (every string constant named
// Code... in agent/api and in this package), so a new code cannot ship
// undocumented, nor a documented one linger after its removal.
func TestOpenAPIListsEveryErrorCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(localapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, c := range doc.Components.Schemas.ErrorCode.Enum {
		documented[c] = true
	}
	defined := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range []string{"../api", "."} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							defined[v] = fset.Position(id.Pos()).String()
						}
					}
				}
			}
		}
	}
	if len(defined) < 20 {
		t.Fatalf("found only %d error codes in the code: %v", len(defined), defined)
	}
	for c, where := range defined {
		if !documented[c] {
			t.Errorf("error code %q (%s) is not in docs/openapi.yaml's ErrorCode", c, where)
		}
	}
	for c := range documented {
		if _, ok := defined[c]; !ok {
			t.Errorf("docs/openapi.yaml's ErrorCode lists %q, which no Code constant defines", c)
		}
	}
}
