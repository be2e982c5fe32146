package api

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"printgate/internal/apispec"
)

// TestOpenAPICoversEveryRoute: the operations docs/hub-openapi.yaml names
// under /v1/ are exactly the routes the API's mux serves, so a route
// cannot ship undescribed nor a described one linger after its removal.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for _, op := range spec.Operations() {
		if _, path, _ := strings.Cut(op, " "); strings.HasPrefix(path, "/v1/") {
			described = append(described, op)
		}
	}
	served := New(nil, Options{}).Patterns()
	slices.Sort(described)
	slices.Sort(served)
	for _, p := range served {
		if !slices.Contains(described, p) {
			t.Errorf("the API serves %s, which %s does not describe", p, apispec.HubYAMLPath)
		}
	}
	for _, p := range described {
		if !slices.Contains(served, p) {
			t.Errorf("%s describes %s, which the API does not serve", apispec.HubYAMLPath, p)
		}
	}
	if len(served) < 16 {
		t.Errorf("only %d routes: %v", len(served), served)
	}
}

// TestNoRouteAnswers: a path under /v1/ no route has is 404 not_found and
// a route's path under another method 405 method_not_allowed with Allow,
// both in the API's error format (the rig holds them to the description).
func TestNoRouteAnswers(t *testing.T) {
	r := newRig(t)
	if st, v := r.do(t, "GET", "/v1/nothing/here", r.acmeKey, ""); st != 404 || code(v) != CodeNotFound {
		t.Errorf("GET /v1/nothing/here: %d %v; want 404 not_found", st, v)
	}
	req, _ := http.NewRequest("DELETE", r.url+"/v1/stores/s1/jobs", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE /v1/stores/s1/jobs: %d Allow %q; want 405 GET, HEAD, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if st, v := r.do(t, "PUT", "/v1/webhooks/w1", r.acmeKey, ""); st != 405 || code(v) != CodeMethodNotAllowed {
		t.Errorf("PUT /v1/webhooks/w1: %d %v; want 405 method_not_allowed", st, v)
	}
}

// TestOpenAPIListsEveryErrorCode: the description's ErrorCode enum is
// exactly the codes this package defines (every string constant named
// Code...), so a new code cannot ship undocumented.
func TestOpenAPIListsEveryErrorCode(t *testing.T) {
	root, err := apispec.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, apispec.HubYAMLPath))
	if err != nil {
		t.Fatal(err)
	}
	js, err := apispec.YAMLToJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	defined := map[string]string{}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
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
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					defined[v] = fset.Position(id.Pos()).String()
				}
			}
			return true
		})
	}
	if len(defined) < 20 {
		t.Fatalf("found only %d error codes in the code: %v", len(defined), defined)
	}
	for c, where := range defined {
		if !slices.Contains(doc.Components.Schemas.ErrorCode.Enum, c) {
			t.Errorf("error code %q (%s) is not in %s's ErrorCode", c, where, apispec.HubYAMLPath)
		}
	}
	for _, c := range doc.Components.Schemas.ErrorCode.Enum {
		if _, ok := defined[c]; !ok {
			t.Errorf("%s's ErrorCode lists %q, which no Code constant defines", apispec.HubYAMLPath, c)
		}
	}
}
