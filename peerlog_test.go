package printgate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// peerDoors are the packages a peer talks to (the cloud link, the LAN API,
// the raw ports, the manager page, the Host check) and, for the agent's
// own package, the files where the doors meet the core. Every log line in
// them that a peer can cause must go through internal/warnlimit (docs/DESIGN.md,
// invariant 10): a cloud that once cancelled 220,000 unknown tasks wrote
// one WARN each and rotated every backup of the log in a minute, taking
// the history that would have shown the attack with it.
var peerDoors = map[string][]string{
	"printgate/sync/link":       nil, // nil: every file
	"printgate/agent/localapi":  nil,
	"printgate/agent/rawport":   nil,
	"printgate/agent/web":       nil,
	"printgate/agent/hostcheck": nil,
	"printgate/agent":           {"doors.go", "raw.go"},
	// The hub's doors: the agents' websocket, the device flow, the order
	// API and the webhook sender (a receiver's answers).
	"printgate/hub/agentlink": nil,
	"printgate/hub/pairing":   nil,
	"printgate/hub/api":       nil,
	"printgate/hub/fleet":     nil,
	"printgate/hub/webhook":   nil,
}

// peerLogAllowed are the direct log calls (not through a warnlimit.Limiter)
// the doors may make, each because no peer can cause it at will: it
// follows a local failure (disk, config), an action of the agent's own,
// or an action only the manager (signed in, or at the PC) can take. The
// key is "package/file.go Func: message" (a message that is not a
// constant is its source text). Debug lines are not listed: they are
// written only while someone diagnoses with [log] level = "debug", as an
// access log is.
var peerLogAllowed = map[string]string{
	// The cloud link: its own connection's life, paced by its reconnect
	// backoff, and failures of this PC's disk.
	"printgate/sync/link/link.go (*Link).Run: cloud link down":                                                                                                          "one per connection lost, paced by the reconnect backoff",
	"printgate/sync/link/link.go (*Link).Run: cloud link waiting for pairing: no device token yet":                                                                      "once per wait for a token",
	"printgate/sync/link/link.go (*Link).Run: cloud link: cannot read the device token":                                                                                 "a local file, paced by the backoff",
	"printgate/sync/link/link.go (*Link).Run: cloud link: the cloud refused this agent's device token; pair the agent again (it reconnects once a new token is stored)": "once: the link then waits for a new token",
	"printgate/sync/link/session.go (*session).run: cloud link: outbox depth unknown for hello":                                                                         "the local spool, once per connection",
	"printgate/sync/link/session.go (*session).run: cloud link online":                                                                                                  "once per connection, paced by the reconnect backoff",
	"printgate/sync/link/session.go (*session).run: cloud link: the device token was removed or replaced; closing the connection that used it":                          "the manager unpaired or paired again",
	"printgate/sync/link/pump.go (*session).pump: cloud link: cannot read the outbox":                                                                                   "the local spool",
	"printgate/sync/link/pump.go ordered: cloud link: outbox events out of order; sorting the batch":                                                                    "the local spool",
	"printgate/sync/link/pump.go (*session).dropInvalid: cloud link: outbox event cannot be sent and is dropped":                                                        "the local spool's content",
	"printgate/sync/link/pump.go (*session).acked: cloud link: cannot delete acknowledged events from the outbox; retrying":                                             "the local spool",
	"printgate/sync/link/pump.go (*session).resendDue: cloud link: cannot read an unacknowledged batch again":                                                           "the local spool",
	"printgate/sync/link/pump.go (*session).retryAcks: cloud link: still cannot delete acknowledged events from the outbox":                                             "the local spool",
	"printgate/sync/link/commands.go (*session).storedResult: could not read a cloud command's stored result; running it":                                               "the local spool",
	"printgate/sync/link/commands.go (*session).storedResult: a cloud command's stored result is unreadable; running it":                                                "the local spool's content",

	// The raw ports' own life: start, reload, and accept errors paced by
	// the accept backoff.
	"printgate/agent/raw.go (*Agent).openRawPortOn: raw port: recent jobs unreadable; a POS resend right after this start would not be marked POSSIBLE DUPLICATE":       "the local spool, at start",
	"printgate/agent/raw.go (*Agent).openRawPortOn: raw port listening":                                                                                                 "at start and reload",
	"printgate/agent/raw.go (*Agent).syncRawPorts: reload: a raw port could not be opened; POS jobs sent to it are refused by the network until it is fixed":            "at reload",
	"printgate/agent/raw.go (*Agent).syncRawPorts: reload: the raw port's listener could not be kept; it is opened again, and a POS connecting in between sees a reset": "at reload",
	"printgate/agent/rawport/port.go (*Port).acceptLoop: rawport: accept failed":                                                                                        "paced by the accept backoff (retry_in)",

	// The hub's agent connections: each line is once per connection an
	// agent's handshake opened, and agentlink admits at most 30 of those a
	// minute per store (more are refused with one WARN a minute), or a
	// failure of the hub's own record or code.
	"printgate/hub/agentlink/conn.go (*conn).sendMsg: hub: encode a frame":                                                                                          "the hub's own frame: a bug, not a peer",
	"printgate/hub/agentlink/conn.go (*conn).run: hub: release the store's owner record":                                                                            "the hub's record, once per connection",
	"printgate/hub/agentlink/conn.go (*conn).run: hub: agent disconnected":                                                                                          "once per admitted connection",
	`printgate/hub/agentlink/conn.go (*conn).write: "hub: " + what + " failed"`:                                                                                     "once per admitted connection: it ends it",
	"printgate/hub/agentlink/conn.go (*conn).write: hub: closing the connection":                                                                                    "once per admitted connection: it ends it",
	"printgate/hub/agentlink/conn.go (*conn).onHello: hub: claim the store":                                                                                         "the hub's record, once per connection",
	"printgate/hub/agentlink/conn.go (*conn).onHello: hub: replaces the store's earlier connection":                                                                 "once per admitted connection",
	"printgate/hub/agentlink/conn.go (*conn).onHello: hub: watch the store's jobs":                                                                                  "the hub's record, once per connection",
	"printgate/hub/agentlink/conn.go (*conn).onHello: hub: agent welcomed":                                                                                          "once per admitted connection",
	"printgate/hub/agentlink/conn.go (*conn).pump: hub: list the store's pending jobs":                                                                              "the hub's record",
	"printgate/hub/agentlink/conn.go (*conn).pump: hub: read a pending job":                                                                                         "the hub's record",
	"printgate/hub/agentlink/conn.go (*conn).pump: hub: record a job as sent":                                                                                       "the hub's record",
	"printgate/hub/agentlink/server.go (*Server).admit: hub: a store's agent opens connections too fast; its handshakes are refused (503) until the minute is over": "once per store and minute",
	"printgate/hub/agentlink/server.go New: hub: watch owner records":                                                                                               "the hub's record, at start",
	"printgate/hub/agentlink/server.go (*Server).ServeHTTP: hub: device token check":                                                                                "the hub's record failing, not the token",
	"printgate/hub/agentlink/server.go (*Server).ServeHTTP: hub: websocket handshake failed":                                                                        "after the store's handshake budget admitted it",
	"printgate/hub/agentlink/server.go (*Server).ServeHTTP: hub: agent connected":                                                                                   "once per admitted connection",
	// The device flow logs only its record's failures.
	"printgate/hub/pairing/pairing.go (*Flow).deviceCode: hub pairing: new code": "the hub's record",
	"printgate/hub/pairing/pairing.go (*Flow).token: hub pairing: poll":          "the hub's record",

	// The order API: failures of the hub's own record, and what a tenant's
	// API key does once per change it makes (a job stored, bounded by the
	// job quotas as its record is; a revocation; a pairing code, single-use,
	// decided). Refusals go through the API's limiter.
	"printgate/hub/api/actions.go (*API).DecidePairing: hub api: too many unknown pairing codes; the tenant's pairing decisions are refused for a minute": "once per tenant and minute",
	"printgate/hub/api/actions.go (*API).DecidePairing: hub api: pairing decided":                                                                         "once per pairing code: codes are single-use",
	"printgate/hub/api/api.go (*API).checkKey: hub api: check an API key":                                                                                 "the hub's record failing, not the key",
	"printgate/hub/api/api.go (*API).authFor: hub api: read a store":                                                                                      "the hub's record",
	"printgate/hub/api/api.go (*API).submit: hub api: job stored":                                                                                         "once per job stored, bounded by max_jobs_per_store and max_jobs_per_tenant",
	"printgate/hub/api/api.go (*API).revoke: hub api: devices revoked":                                                                                    "a tenant's API key revoking its store's devices",
	`printgate/hub/api/api.go (*API).internal: "hub api: " + what`:                                                                                        "the hub's record",
	// The fleet page: a signed-in user's actions, the right password, and
	// failures of the hub's own record or templates.
	"printgate/hub/fleet/fleet.go New: fleet page: cannot watch the jobs; every fleet read scans the stores' jobs in full": "the hub's record, at start",
	"printgate/hub/fleet/fleet.go (*Page).render: fleet page: no template":                                                 "the hub's own templates: a bug",
	"printgate/hub/fleet/fleet.go (*Page).render: fleet page: render":                                                      "the hub's own templates, rendered into a buffer: a bug",
	`printgate/hub/fleet/fleet.go (*Page).serverError: "fleet page: " + whatID`:                                            "the hub's record",
	"printgate/hub/fleet/fleetview.go (*Page).fleetFragment: fleet page: read the fleet":                                   "the hub's record",
	"printgate/hub/fleet/fleetview.go (*Page).jobAction: fleet page: command":                                              "a signed-in user's action",
	"printgate/hub/fleet/logs.go (*Page).logsStream: fleet page: read the store for a log tail":                            "the hub's record",
	"printgate/hub/fleet/logs.go (*Page).logsStream: fleet page: start a log tail":                                         "the hub's record or the agent link failing",
	"printgate/hub/fleet/logs.go (*Page).logsStream: fleet page: log tail":                                                 "a signed-in user's action",
	"printgate/hub/fleet/login.go (*Page).loginSubmit: fleet page: signed in":                                              "the right password",
	"printgate/hub/fleet/pair.go (*Page).pairSubmit: fleet page: pairing decided":                                          "a signed-in user's decision, once per single-use code",

	// The Host check reads this PC's addresses at most once per addrsTTL.
	"printgate/agent/hostcheck/hostcheck.go (*Guard).ownAddr: cannot list this computer's network addresses; requests that name the agent by an address are refused unless it is in allowed_hosts": "once per addrsTTL",

	// The manager page: what a signed-in manager does, and PIN checks,
	// which the shared PIN budget bounds for every address together (20
	// wrong PINs or setup codes an hour are checked, the rest refused
	// unchecked), so their lines are bounded by it.
	"printgate/agent/web/addprinter.go (*Page).reloadAction: manager page: config reload refused":                                                                              "a signed-in manager's action",
	"printgate/agent/web/addprinter.go (*Page).reloadAction: manager page: config reloaded":                                                                                    "a signed-in manager's action",
	"printgate/agent/web/addprinter.go (*Page).addAction: manager page: add printer refused":                                                                                   "a signed-in manager's action",
	"printgate/agent/web/addprinter.go (*Page).addAction: manager page: printer added to the config":                                                                           "a signed-in manager's action",
	"printgate/agent/web/addprinter.go (*Page).addAction: manager page: config reload after add refused":                                                                       "a signed-in manager's action",
	"printgate/agent/web/addprinter.go (*Page).testAddress: manager page: printer address test failed":                                                                         "a signed-in manager's action",
	"printgate/agent/web/pairing.go (*Page).unpair: manager page: unpaired from the cloud":                                                                                     "a signed-in manager's action, with the PIN",
	"printgate/agent/web/tasks.go (*Page).taskAction: manager page: task action refused":                                                                                       "a signed-in manager's action",
	"printgate/agent/web/tasks.go (*Page).taskAction: manager page: task action":                                                                                               "a signed-in manager's action",
	"printgate/agent/web/auth.go (*Page).setupSubmit: manager page: PIN set from this PC's browser with the setup code; the code is deleted":                                   "once: the setup code is then gone",
	"printgate/agent/web/auth.go (*Page).loginSubmit: manager page: signed in":                                                                                                 "the right PIN",
	"printgate/agent/web/auth.go (*Page).checkDevicePIN: manager page: wrong PIN":                                                                                              "a browser that signed in with the right PIN: DeviceFailureLimit of them forget it",
	"printgate/agent/web/auth.go (*Page).checkDevicePIN: manager page: a browser that had signed in before typed too many wrong PINs; it is no longer exempt from a PIN pause": "once per device, and devices come only from right PINs",
	"printgate/agent/web/auth.go (*Page).checkDevicePIN: manager page: cannot forget a browser that typed wrong PINs":                                                          "a local file, once per device",
	"printgate/agent/web/auth.go (*Page).signIn: manager page: cannot remember this browser; it signs in like any other during a PIN pause":                                    "a local file, after the right PIN",
	"printgate/agent/web/auth.go (*Page).checkPIN: manager page: wrong PIN":                                                                                                    "bounded by the shared PIN budget",
	"printgate/agent/web/lockout.go (*Page).pinFailed: manager page: too many wrong PINs or setup codes from one client; refusing it for a while":                              "bounded by the shared PIN budget",
	`printgate/agent/web/lockout.go (*Page).pinFailed: "manager page: many wrong PINs from " + strconv.Itoa(trip.Clients) + " addresses; PIN sign-in is paused for everyone for " + duration(langEN, trip.Pause) + ". If it was not you, check who is on the store's network"`: "once per pause of the shared PIN budget",
	"printgate/agent/web/setupcode.go (*Page).checkSetupCode: manager page: cannot read the setup code":                                                                                                                                                    "a local file, after the shared PIN budget let the check through",
	"printgate/agent/web/setupcode.go (*Page).checkSetupCode: manager page: wrong setup code":                                                                                                                                                              "bounded by the shared PIN budget",
	"printgate/agent/web/setupcode.go (*Page).replaceSetupCode: manager page: cannot remove the setup code":                                                                                                                                                "once per spent code (10 wrong ones, bounded by the shared PIN budget)",
	"printgate/agent/web/setupcode.go (*Page).replaceSetupCode: manager page: the first-run setup code was typed wrong too often and no new one could be made; restart printgate for a new one, or set the PIN with printgate pin set":                     "once per spent code",
	"printgate/agent/web/setupcode.go (*Page).replaceSetupCode: manager page: the first-run setup code was typed wrong too often; it no longer works and a new one replaces it (printgate status shows it). If it was not you, check what runs on this PC": "once per spent code",
	`printgate/agent/web/setupcode.go (*Page).replaceSetupCode: "first-run setup code: " + code + " (a new one: the last was typed wrong too often; open /setup on this PC and type it; it is also in printgate status)"`:                                  "once per spent code",
}

// goPackage is what go list says of a package.
type goPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
}

// TestPeerLogLinesAreLimited walks the doors' log calls with go/types and
// fails on one a peer could cause that does not go through a
// warnlimit.Limiter and is not in peerLogAllowed, and on an allow-list
// entry that no longer matches a call.
func TestPeerLogLinesAreLimited(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the doors' packages")
	}
	var doors []string
	for p := range peerDoors {
		doors = append(doors, p)
	}
	sort.Strings(doors)
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles"}, doors...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*goPackage{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = &p
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p := pkgs[path]
		if p == nil || p.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p.Export)
	})
	seen := map[string]bool{}
	var bad []string
	for _, path := range doors {
		p := pkgs[path]
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
		if _, err := (&types.Config{Importer: imp}).Check(path, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", path, err)
		}
		for i, f := range files {
			name := p.GoFiles[i]
			if only := peerDoors[path]; only != nil && !slices.Contains(only, name) {
				continue
			}
			for _, c := range directLogCalls(fset, f, info) {
				key := path + "/" + name + " " + c
				seen[key] = true
				if _, ok := peerLogAllowed[key]; !ok {
					bad = append(bad, key)
				}
			}
		}
	}
	for _, b := range bad {
		t.Errorf("a log call at a door that does not go through a warnlimit.Limiter: %s", b)
	}
	if len(bad) > 0 {
		t.Log("if a peer can cause such a line (a frame, a request, a connection), log it with the door's warnlimit.Limiter " +
			"(Warn, or Log at another level); if no peer can, add it to peerLogAllowed with the reason")
	}
	for k := range peerLogAllowed {
		if !seen[k] {
			t.Errorf("peerLogAllowed lists a call that is no longer there: %s", k)
		}
	}
}

// logMethods are the slog methods (of *slog.Logger and the package) that
// write a record, with the index of their message argument.
var logMethods = map[string]int{
	"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
	"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1,
	"Log": 2, "LogAttrs": 2,
}

// directLogCalls returns, as "Func: message", f's calls that write a log
// record at INFO or above straight to log/slog (or the log package),
// rather than through a warnlimit.Limiter.
func directLogCalls(fset *token.FileSet, f *ast.File, info *types.Info) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			fn = "(" + exprText(fset, fd.Recv.List[0].Type) + ")." + fn
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			obj, ok := info.Uses[sel.Sel].(*types.Func)
			if !ok || obj.Pkg() == nil {
				return true
			}
			switch obj.Pkg().Path() {
			case "log":
				if n := obj.Name(); strings.HasPrefix(n, "Print") || strings.HasPrefix(n, "Fatal") || strings.HasPrefix(n, "Panic") {
					out = append(out, fn+": log."+n)
				}
				return true
			case "log/slog":
			default:
				return true
			}
			at, ok := logMethods[obj.Name()]
			if !ok || len(call.Args) <= at {
				return true
			}
			if recv := obj.Signature().Recv(); recv != nil && !strings.HasSuffix(recv.Type().String(), "slog.Logger") {
				return true
			}
			if strings.HasPrefix(obj.Name(), "Debug") {
				return true
			}
			if strings.HasPrefix(obj.Name(), "Log") {
				if lv := info.Types[call.Args[1]].Value; lv != nil {
					if n, ok := constant.Int64Val(lv); ok && n <= int64(slog.LevelDebug) {
						return true
					}
				}
			}
			msg := exprText(fset, call.Args[at])
			if v := info.Types[call.Args[at]].Value; v != nil && v.Kind() == constant.String {
				msg = constant.StringVal(v)
			}
			out = append(out, fn+": "+msg)
			return true
		})
	}
	return out
}

// exprText is e as it is written in the source, on one line.
func exprText(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, e); err != nil {
		return fmt.Sprintf("%T", e)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
