package printgate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers is the rule of docs/DESIGN.md, "Layout", "dependencies point one way: cmd → agent,
// sync, installer → spool, drivers, agent/wheel; spool, drivers and wheel
// never import agent", as data. The first row whose pkgs matches a package
// governs it; may lists the module packages it may import (its own
// subtree only where listed), and an entry starting with "-" forbids what a
// broader entry would allow. A pattern is an import path, or a path ending
// in "/..." for it and every package below it. Every package of the module
// must match a row, so a new folder gets a row before it gets importers.
// Only non-test imports count: a test may reach up (the installer's tests
// read what they write with the agent's config parser).
var layers = []layer{
	{"printgate/internal/...", nil,
		"leaves (clock, backoff, the TOML quoter) that anything may import import nothing of the module"},
	{"printgate/taskdef", nil,
		"the words of a task the spool and the wire share (states, origins, priorities) are a leaf: the hub speaks the wire without linking the spool"},
	{"printgate/agent/wheel", []string{"printgate/internal/..."},
		"the timing wheels are below the agent"},
	{"printgate/agent", []string{"printgate/agent/...", "-printgate/agent/web", "-printgate/agent/localapi",
		"printgate/sync/...", "printgate/spool", "printgate/taskdef", "printgate/drivers/...", "printgate/internal/..."},
		"the core imports neither the manager page nor the LAN API: they are adapters of it"},
	{"printgate/agent/daemon", []string{"printgate/agent", "printgate/agent/...",
		"printgate/sync/...", "printgate/spool", "printgate/taskdef", "printgate/drivers/...", "printgate/internal/..."},
		"the composition root wires the core to its adapters (LAN API, page, cloud link); nothing in agent/ imports it"},
	{"printgate/agent/...", []string{"printgate/agent/...", "-printgate/agent/daemon",
		"printgate/sync/...", "printgate/spool", "printgate/taskdef", "printgate/drivers/...", "printgate/internal/..."},
		"the agent's packages are above sync, spool and drivers, never beside the installer"},
	{"printgate/sync/wire", []string{"printgate/taskdef", "printgate/drivers/...", "printgate/internal/..."},
		"the wire is the contract both sides link: the task's words from taskdef, never the spool"},
	{"printgate/sync/...", []string{"printgate/sync/...", "printgate/spool", "printgate/taskdef", "printgate/drivers/...", "printgate/internal/..."},
		"the cloud link is beside the agent, never above it"},
	{"printgate/hub/...", []string{"printgate/hub/...", "printgate/sync/wire", "printgate/taskdef", "printgate/drivers/escpos", "printgate/internal/..."},
		"the cloud side speaks the wire and parses ticket documents as the agent's renderer does; it never imports the agent, the spool or the agent's link"},
	{"printgate/installer/...", []string{"printgate/installer/...", "printgate/spool", "printgate/taskdef", "printgate/drivers/...", "printgate/internal/..."},
		"the installer is beside the agent, never above it"},
	{"printgate/spool/...", []string{"printgate/spool/...", "printgate/taskdef", "printgate/internal/..."},
		"the spool is at the bottom"},
	{"printgate/drivers/...", []string{"printgate/drivers/...", "printgate/internal/..."},
		"drivers are at the bottom"},
	{"printgate/cmd/...", []string{"printgate/..."},
		"binaries are at the top"},
	{"printgate/scripts/...", []string{"printgate/..."},
		"tools run by hand (generators) are at the top, like binaries"},
	{"printgate/hostile", nil,
		"the attack suite is test files against the real binary; its package imports nothing"},
	{"printgate", nil,
		"the module's root holds only module-wide tests"},
}

// layer is one row of layers.
type layer struct {
	pkgs string   // the packages the row governs
	may  []string // what they may import of the module
	why  string   // the rule in words, for the failure message
}

// pending are the rule breaks known today, each waiting for a move another
// change makes. TestLayers logs them instead of failing, and fails when one
// no longer occurs, so the list cannot outlive the breaks: delete the
// entry when its move lands.
var pending = []pendingBreak{}

// pendingBreak is one entry of pending: from imports to, against its row.
type pendingBreak struct{ from, to, why string }

// release is the binary shipped to stores, checked as built for each OS
// it ships for.
const release = "printgate/cmd/printgate"

var releaseOSes = []string{"linux", "windows"}

// testDoubles may be linked into the release binary only through the
// importers listed: an import path, or an import path and a file name for
// one file of a package. The demo is the README's main job and runs the
// emulated printers and cloud; nothing else in the binary may use them.
var testDoubles = map[string][]string{
	"printgate/drivers/printertest": {"printgate/cmd/printgate/internal/demo/demo.go"},
	"printgate/sync/cloudtest":      {"printgate/cmd/printgate/internal/demo/demo.go"},
}

// banned are packages the release binary must not link at all: the
// testing machinery and test-only dependencies, and the hub with its
// engine (NATS), which is the cloud's binary, never the store's. A
// trailing "/" bans the path's whole tree.
var banned = []string{"testing", "net/http/httptest", "github.com/chromedp/", "pgregory.net/rapid", "go.uber.org/goleak",
	"github.com/getkin/", "github.com/santhosh-tekuri/", "go.yaml.in/yaml/", "printgate/internal/apispec",
	"github.com/nats-io/", "printgate/hub/"}

// hub is the cloud's binary; hubBanned are what it must not link: the
// store agent, its spool and the spool's storage engine. The wire it
// shares with the agent takes the task's words from taskdef.
const hub = "printgate/cmd/printgate-hub"

var hubBanned = []string{"go.etcd.io/bbolt", "printgate/spool", "printgate/agent", "printgate/sync/link", "go.bug.st/serial"}

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
}

// goList runs `go list -json` with args for goos and decodes its packages.
func goList(t *testing.T, goos string, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Dir,Standard,GoFiles,CgoFiles,Imports"}, args...)...)
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list %v: %v\n%s", goos, args, err, stderr.Bytes())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("GOOS=%s go list %v: %v", goos, args, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("GOOS=%s go list %v listed nothing", goos, args)
	}
	return pkgs
}

// matches reports whether path is pattern, or below it for "x/...".
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func inModule(path string) bool { return matches("printgate/...", path) }

// mayImport reports whether a package governed by may can import imp.
func mayImport(may []string, imp string) bool {
	ok := false
	for _, m := range may {
		if neg, isNeg := strings.CutPrefix(m, "-"); isNeg {
			if matches(neg, imp) {
				return false
			}
		} else if matches(m, imp) {
			ok = true
		}
	}
	return ok
}

// TestLayers ensures every package of the module imports only the layers
// its row of layers allows, on every OS the binary ships for.
func TestLayers(t *testing.T) {
	seen := map[[2]string]bool{}
	noRow := map[string]bool{}
	for _, goos := range releaseOSes {
		for _, p := range goList(t, goos, "./...") {
			row := slices.IndexFunc(layers, func(l layer) bool { return matches(l.pkgs, p.ImportPath) })
			if row < 0 {
				if !noRow[p.ImportPath] {
					t.Errorf("package %s has no row in layers; add one saying what it may import", p.ImportPath)
				}
				noRow[p.ImportPath] = true
				continue
			}
			l := layers[row]
			for _, imp := range p.Imports {
				if !inModule(imp) || imp == p.ImportPath || mayImport(l.may, imp) {
					continue
				}
				edge := [2]string{p.ImportPath, imp}
				if seen[edge] {
					continue
				}
				seen[edge] = true
				if slices.ContainsFunc(pending, func(e pendingBreak) bool { return e.from == edge[0] && e.to == edge[1] }) {
					continue
				}
				t.Errorf("GOOS=%s: %s imports %s, above its layer (%s: %s)", goos, p.ImportPath, imp, l.pkgs, l.why)
			}
		}
	}
	for _, e := range pending {
		if seen[[2]string{e.from, e.to}] {
			t.Logf("pending: %s imports %s (%s)", e.from, e.to, e.why)
		} else {
			t.Errorf("pending break %s -> %s no longer occurs: delete it from pending", e.from, e.to)
		}
	}
}

// TestReleaseDeps ensures the release binary, as built for each OS it
// ships for, links the test doubles only through the importers
// testDoubles allows and links no banned package.
func TestReleaseDeps(t *testing.T) {
	used := map[string]bool{}
	for _, goos := range releaseOSes {
		deps := goList(t, goos, "-deps", release)
		linked := map[string]bool{}
		for _, p := range deps {
			linked[p.ImportPath] = true
			for _, b := range banned {
				if p.ImportPath == b || strings.HasSuffix(b, "/") && strings.HasPrefix(p.ImportPath, b) {
					t.Errorf("GOOS=%s: %s links %s, which is for tests only", goos, release, p.ImportPath)
				}
			}
		}
		if !linked[release] || !linked["printgate/spool"] {
			t.Fatalf("GOOS=%s: go list -deps %s did not list the binary and its spool", goos, release)
		}
		for _, p := range deps {
			for _, imp := range p.Imports {
				allowed, double := testDoubles[imp]
				if !double {
					continue
				}
				if slices.Contains(allowed, p.ImportPath) {
					used[p.ImportPath] = true
					continue
				}
				files := importingFiles(t, p, imp)
				for _, f := range files {
					if slices.Contains(allowed, p.ImportPath+"/"+f) {
						used[p.ImportPath+"/"+f] = true
						continue
					}
					t.Errorf("GOOS=%s: %s links the test double %s into %s; only %v may",
						goos, filepath.Join(p.Dir, f), imp, release, allowed)
				}
			}
		}
	}
	for double, allowed := range testDoubles {
		for _, a := range allowed {
			if !used[a] {
				t.Errorf("testDoubles lets %s import %s, but it no longer does: update the entry", a, double)
			}
		}
	}
}

// TestHubDeps ensures the hub binary links neither the store agent nor
// its spool and bbolt: the hub stores in JetStream, and a chain's cloud
// must not carry the store's engine.
func TestHubDeps(t *testing.T) {
	for _, goos := range releaseOSes {
		deps := goList(t, goos, "-deps", hub)
		linked := false
		for _, p := range deps {
			linked = linked || p.ImportPath == "printgate/sync/wire"
			for _, b := range hubBanned {
				if matches(b, p.ImportPath) || matches(b+"/...", p.ImportPath) {
					t.Errorf("GOOS=%s: %s links %s, the store's, not the cloud's", goos, hub, p.ImportPath)
				}
			}
		}
		if !linked {
			t.Fatalf("GOOS=%s: go list -deps %s did not list the wire", goos, hub)
		}
	}
}

// importingFiles returns the files of p (as built for the listed OS) that
// import imp.
func importingFiles(t *testing.T, p listed, imp string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, name := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Imports {
			if path, err := strconv.Unquote(s.Path.Value); err == nil && path == imp {
				out = append(out, name)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("go list says %s imports %s, but none of its files %v does", p.ImportPath, imp, p.GoFiles)
	}
	return out
}

// TestLayersTableIsSound ensures the layer table says what it means: no
// row is hidden behind an earlier one that already governs all its
// packages, and each pending break is one its row forbids.
func TestLayersTableIsSound(t *testing.T) {
	for i, l := range layers {
		for _, earlier := range layers[:i] {
			if covers(earlier.pkgs, l.pkgs) {
				t.Errorf("row %s never applies: the earlier row %s governs all its packages", l.pkgs, earlier.pkgs)
			}
		}
	}
	for _, e := range pending {
		row := slices.IndexFunc(layers, func(l layer) bool { return matches(l.pkgs, e.from) })
		if row < 0 || mayImport(layers[row].may, e.to) {
			t.Errorf("pending break %s -> %s is not forbidden by the table: delete it", e.from, e.to)
		}
	}
}

// covers reports whether the pattern earlier matches every package the
// pattern later does.
func covers(earlier, later string) bool {
	if base, ok := strings.CutSuffix(later, "/..."); ok {
		return strings.HasSuffix(earlier, "/...") && matches(earlier, base)
	}
	return matches(earlier, later)
}
