package hub

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"printgate/hub/agentlink"
	"printgate/hub/api"
	"printgate/hub/config"
	"printgate/hub/fleet"
	"printgate/hub/pairing"
	"printgate/internal/apispec"
)

// muxPatterns reads the patterns hub.go registers on its mux
// (mux.Handle and mux.HandleFunc calls), resolving the package constants
// they are built from; "/v1/" (the order API) is expanded into the API's
// own routes. A pattern built from something else fails the test: teach
// resolve the new constant.
func muxPatterns(t *testing.T) []string {
	t.Helper()
	consts := map[string]string{"pairing.Prefix": pairing.Prefix, "agentlink.Path": agentlink.Path, "fleet.Prefix": fleet.Prefix}
	var resolve func(e ast.Expr) (string, bool)
	resolve = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			}
		case *ast.BinaryExpr:
			l, ok1 := resolve(e.X)
			r, ok2 := resolve(e.Y)
			return l + r, ok1 && ok2 && e.Op == token.ADD
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok {
				s, ok := consts[x.Name+"."+e.Sel.Name]
				return s, ok
			}
		}
		return "", false
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "hub.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "mux" {
			return true
		}
		p, ok := resolve(call.Args[0])
		if !ok {
			t.Errorf("%s: a mux pattern this test cannot read; add its constant to muxPatterns", fset.Position(call.Pos()))
			return true
		}
		if p == "/v1/" {
			out = append(out, api.New(nil, api.Options{}).Patterns()...)
			return true
		}
		out = append(out, p)
		return true
	})
	return out
}

// TestOpenAPICoversTheHubsRoutes: every route the hub's mux serves under
// the paths docs/hub-openapi.yaml covers (the order API, the device flow,
// /healthz, /metrics) is an operation of it, and every operation is a
// route the mux serves, which a request to the running hub reaches.
func TestOpenAPICoversTheHubsRoutes(t *testing.T) {
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	described := spec.Operations()
	var served []string
	for _, p := range muxPatterns(t) {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			// A pattern without a method takes every method: only the
			// test API (/api/) is mounted so, and it is not described.
			if apispec.Hub.Covered(p) {
				t.Errorf("hub.go mounts %s for every method; give it its methods", p)
			}
			continue
		}
		if apispec.Hub.Covered(path) {
			served = append(served, method+" "+path)
		}
	}
	for _, p := range served {
		if !slices.Contains(described, p) {
			t.Errorf("the hub serves %s, which %s does not describe", p, apispec.HubYAMLPath)
		}
	}
	for _, p := range described {
		if !slices.Contains(served, p) {
			t.Errorf("%s describes %s, which the hub's mux does not serve", apispec.HubYAMLPath, p)
		}
	}

	// Each operation reaches a handler of the running hub: its answer is
	// not the mux's own 404 or 405.
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 64, PairingInterval: time.Second}
	h, err := Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	served2 := make(chan error, 1)
	go func() { served2 <- h.Serve() }()
	defer func() {
		h.Close()
		<-served2
	}()
	var violations []error
	client := &http.Client{Transport: spec.Transport(nil, func(err error) { violations = append(violations, err) })}
	defer client.CloseIdleConnections()
	base := "http://" + h.Addr().String()
	fill := strings.NewReplacer("{store}", "s1", "{task_no}", "T1", "{id}", "c1", "{user_code}", "BCDF-GHJK")
	for _, op := range described {
		method, path, _ := strings.Cut(op, " ")
		req, err := http.NewRequest(method, base+fill.Replace(path), strings.NewReader(url.Values{"client_id": {"printgate"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s: %v", op, err)
			continue
		}
		resp.Body.Close()
		// Every /v1/ route wants a key (401 without one); a 404 is no
		// route's.
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound {
			t.Errorf("%s: %d, the mux's own answer: no handler took it", op, resp.StatusCode)
		}
	}
	for _, err := range violations {
		t.Error(err)
	}
}
