// Package doctor checks that a machine can run the agent, as printgate
// doctor shows it: the config, the data dir and its disk, the listen port,
// the raw ports, each printer, access to serial and USB devices, the cloud
// and the device token, and the clock. Each check gives one Result with,
// for a failure or a warning, exactly what to do.
package doctor

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/cmd/printgate/internal/probe"
	"printgate/drivers"
	"printgate/drivers/escpos"
	"printgate/installer"
	"printgate/internal/portowner"
	"printgate/spool"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// Status is the outcome of one doctor check.
type Status int

// The outcomes of a check.
const (
	Pass Status = iota // works
	Warn               // works, but will not for long or not fully
	Fail               // must be fixed; doctor exits 1
	Skip               // does not apply here, or cannot run
)

// Mark is the symbol a status is shown with.
func (s Status) Mark() string {
	switch s {
	case Pass:
		return "✓"
	case Warn:
		return "!"
	case Fail:
		return "✗"
	}
	return "-"
}

// Result is one line of the doctor's checklist: what was checked,
// what was found and, for a failure or warning, exactly what to do.
type Result struct {
	Name   string
	Status Status
	Detail string
	Fix    string
}

// Doctor's thresholds.
const (
	// diskWarnBytes and diskFailBytes bound the free space on the data
	// dir's disk: the spool keeps queued tickets and a week of history.
	diskWarnBytes = 1 << 30
	diskFailBytes = 100 << 20
	// clockWarn and clockFail bound the difference with the cloud's clock:
	// timelines and token expiry read badly past a few seconds, and TLS
	// certificates fail past minutes.
	clockWarn = 30 * time.Second
	clockFail = 5 * time.Minute
)

// Env is what the checks use besides the config; tests replace
// parts of it.
type Env struct {
	Now func() time.Time
	// DiskFree reports the bytes available to this process on dir's disk.
	DiskFree func(dir string) (uint64, error)
	// USB lists the USB printers attached, to find the device of a
	// usb://VID:PID printer.
	USB func() ([]drivers.Found, error)
	// ProbeTimeout bounds each printer's probe; NetTimeout each request to
	// the agent or the cloud.
	ProbeTimeout, NetTimeout time.Duration
	// ServiceUser is the account the installed service runs as, whose
	// access to its files is checked (printgate on Linux).
	ServiceUser string
}

// DefaultEnv is the machine doctor runs on.
var DefaultEnv = Env{
	Now:          time.Now,
	DiskFree:     diskFreeAt,
	USB:          drivers.DiscoverUSB,
	ProbeTimeout: escpos.DefaultCheckTimeout,
	NetTimeout:   10 * time.Second,
	ServiceUser:  installer.ServiceUser,
}

// Run makes every check in order against the config at path and hands
// each result to show as soon as it is known (probes and the cloud take
// seconds). It returns false when the config did not load: the other
// checks need it and were not made.
func Run(ctx context.Context, env Env, path string, show func(...Result)) bool {
	cfg, res := CheckConfig(path)
	show(res)
	if cfg == nil {
		return false
	}
	show(CheckDataDir(cfg), CheckDisk(env, cfg))
	if r, ok := CheckTokenReaders(cfg); ok {
		show(r)
	}
	show(CheckServiceFiles(env, cfg)...)
	port, running := CheckPort(ctx, env, cfg)
	show(port)
	show(CheckRawPorts(env, cfg, running)...)
	show(CheckPrinters(ctx, env, cfg, running)...)
	show(CheckDevices(env, cfg)...)
	show(CheckCloud(ctx, env, cfg), CheckClock(ctx, env, cfg))
	return true
}

// CheckConfig is check 1: the config loads, with every problem shown.
func CheckConfig(path string) (*config.Config, Result) {
	r := Result{Name: "config"}
	cfg, err := config.Load(path)
	if err != nil {
		r.Status = Fail
		var errs config.Errors
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.Detail = fmt.Sprintf("no config at %s", path)
			r.Fix = "run printgate install to write one, or copy the commented sample there; name another file with --config"
		case errors.As(err, &errs):
			r.Detail = fmt.Sprintf("%s has %d problem(s):\n      %s", path, len(errs), strings.ReplaceAll(errs.Error(), "\n", "\n      "))
			r.Fix = "edit the lines named above; each message says what the line needs"
		default:
			r.Detail = err.Error()
			r.Fix = "make the file readable by this account (run doctor as the service's account or root)"
		}
		return nil, r
	}
	cloud := "no cloud (store-only)"
	if cfg.Cloud != nil {
		cloud = "cloud " + cfg.Cloud.URL
	}
	r.Detail = fmt.Sprintf("%s is valid: %d printer(s), listen %s, %s", cfg.Path, len(cfg.Printers), cfg.Listen, cloud)
	return cfg, r
}

// existingDir is dir or, when it does not exist yet, its nearest ancestor
// that does: where the agent would create it, and whose disk it would use.
func existingDir(dir string) (string, error) {
	for d := filepath.Clean(dir); ; {
		fi, err := os.Stat(d)
		switch {
		case err == nil && fi.IsDir():
			return d, nil
		case err == nil:
			return "", fmt.Errorf("%s is a file, not a folder", d)
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no folder of %s exists", dir)
		}
		d = parent
	}
}

// CheckDataDir is check 2a: the data dir exists and takes a synced file,
// or can be created. Nothing is left behind: the probe file is removed,
// and a data dir that does not exist yet is not created (the agent
// creates it with its own account and mode).
func CheckDataDir(cfg *config.Config) Result {
	r := Result{Name: "data dir"}
	dir := cfg.DataDir
	fix := dataDirFix(dir)
	at, err := existingDir(dir)
	if err != nil {
		r.Status, r.Detail, r.Fix = Fail, fmt.Sprintf("%s: %v", dir, err), "set data_dir in "+cfg.Path+" to a folder (or leave it out for the default)"
		return r
	}
	if at != filepath.Clean(dir) {
		// Prove the folder can be made by making a scratch one beside it.
		tmp, err := os.MkdirTemp(at, ".printgate-doctor-*")
		if err != nil {
			r.Status, r.Detail, r.Fix = Fail, fmt.Sprintf("%s does not exist and cannot be created in %s: %v", dir, at, unwrapPath(err)), fix
			return r
		}
		os.Remove(tmp)
		r.Detail = fmt.Sprintf("%s does not exist yet; the agent will create it (%s is writable)", dir, at)
		return r
	}
	if err := probeWrite(dir); err != nil {
		r.Status, r.Detail, r.Fix = Fail, fmt.Sprintf("%s is not writable: %v", dir, err), fix
		return r
	}
	r.Detail = dir + " is writable (a file was created, synced and removed)"
	return r
}

// CheckTokenReaders is the API token's check: a token file, or a config
// that holds the token inline, that other users of this machine can read
// gives them the right to print and cancel tickets. It reports false where
// mode bits say nothing (Windows, whose installer sets the ACLs).
func CheckTokenReaders(cfg *config.Config) (Result, bool) {
	if runtime.GOOS == "windows" || cfg.APIToken == "" {
		return Result{}, false
	}
	r := Result{Name: "api token"}
	path, what := cfg.APITokenFile, "the API token file"
	fix := fmt.Sprintf("chmod 600 %s, or write a new one with printgate token --out %s", path, path)
	if path == "" {
		path, what = cfg.Path, "the config, which holds the API token inline,"
		fix = fmt.Sprintf("chmod 600 %s, or move the token out of it: printgate token --out api-token.txt, then api_token_file = \"api-token.txt\" in place of api_token", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return r, false
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		r.Status, r.Fix = Warn, fix
		r.Detail = fmt.Sprintf("%s (%s) can be read by other users of this machine (mode %04o): whoever reads it can print and cancel tickets", what, path, uint32(perm))
		return r, true
	}
	r.Detail = path + " is readable by its owner only"
	return r, true
}

// probeWrite creates, writes, syncs and removes a file in dir, as the
// spool does with its own.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".printgate-doctor-*")
	if err != nil {
		return unwrapPath(err)
	}
	name := f.Name()
	defer os.Remove(name)
	if _, err := f.Write([]byte("printgate doctor\n")); err != nil {
		f.Close()
		return fmt.Errorf("write: %w", unwrapPath(err))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync: %w", unwrapPath(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close: %w", unwrapPath(err))
	}
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("remove: %w", unwrapPath(err))
	}
	return nil
}

// unwrapPath drops the *PathError's op and path the message repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CheckDisk is check 2b: room on the data dir's disk.
func CheckDisk(env Env, cfg *config.Config) Result {
	r := Result{Name: "disk space"}
	at, err := existingDir(cfg.DataDir)
	if err != nil {
		r.Status, r.Detail = Skip, fmt.Sprintf("cannot tell: %v", err)
		return r
	}
	free, err := env.DiskFree(at)
	if err != nil {
		r.Status, r.Detail = Warn, fmt.Sprintf("cannot read the free space of %s: %v", at, err)
		r.Fix = "check the disk holding " + at
		return r
	}
	// The cap the agent would work out at start, so a store
	// sees what its spool may take before it runs.
	lim := spool.PlanLimits(at, cfg.Spool.MaxSize, cfg.Spool.KeepFree)
	r.Detail = fmt.Sprintf("%s free on the disk of %s", humanBytes(free), at)
	fix := fmt.Sprintf("free space on the disk holding %s (old logs, downloads), or move data_dir in %s to a bigger disk", at, cfg.Path)
	switch {
	case free < diskFailBytes:
		r.Status, r.Fix = Fail, fix
		r.Detail += fmt.Sprintf(": under %s, the spool will soon refuse tickets", humanBytes(diskFailBytes))
	case free < diskWarnBytes:
		r.Status, r.Fix = Warn, fix
		r.Detail += fmt.Sprintf(": under %s", humanBytes(diskWarnBytes))
	}
	r.Detail += fmt.Sprintf("; spool cap %s (%s), %s kept free", spool.FormatSize(lim.Cap), lim.Why(), spool.FormatSize(lim.KeepFree))
	return r
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// CheckPort is check 3: the listen address is free, or held by a running
// printgate. running reports the latter, so the printer check asks the
// agent instead of competing with it for the printers.
func CheckPort(ctx context.Context, env Env, cfg *config.Config) (r Result, running bool) {
	r = Result{Name: "listen " + cfg.Listen}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err == nil {
		ln.Close()
		r.Detail = "free (the agent is not running)"
		return r, false
	}
	base, _ := apiclient.Base(cfg)
	if isPrintgate(ctx, env, base) {
		r.Detail = "in use by printgate (running): " + base + "/healthz answers"
		return r, true
	}
	_, port, _ := net.SplitHostPort(cfg.Listen)
	r.Status = Fail
	switch {
	case errors.Is(err, errAddrNotAvail):
		r.Detail = fmt.Sprintf("cannot listen there: %v", err)
		r.Fix = fmt.Sprintf("the address is not one of this PC's; set listen in %s to \"127.0.0.1:%s\" (this PC only) or \":%s\" (the shop network)", cfg.Path, port, port)
	case errors.Is(err, errPermission):
		r.Detail = fmt.Sprintf("cannot listen there: %v", err)
		r.Fix = fmt.Sprintf("ports below 1024 need privileges; set listen in %s to a port above 1024, such as 8631", cfg.Path)
	default:
		// Named as `printgate run` names it, at the key's line.
		n, _ := strconv.Atoi(port)
		if holder, ok := portowner.Listening(n); ok {
			r.Detail = fmt.Sprintf("%s: in use by another program, %s (%v)", cfg.Where("listen"), holder, unwrapOp(err))
			r.Fix = fmt.Sprintf("set listen in %s to a free port (e.g. 127.0.0.1:8632), or stop %s", cfg.Path, holder)
			break
		}
		r.Detail = fmt.Sprintf("%s: in use by another program (%v)", cfg.Where("listen"), unwrapOp(err))
		r.Fix = fmt.Sprintf("set listen in %s to a free port (e.g. 127.0.0.1:8632), or stop the program using port %s (%s)", cfg.Path, port, whoListensHint(port))
	}
	return r, false
}

// CheckRawPorts checks each printer's raw port (raw_listen): with the agent
// running, that it answers a status query (DLE EOT 1) as a healthy printer
// would, which is what a POS asks first; without it, that the address is
// free for the agent to take.
func CheckRawPorts(env Env, cfg *config.Config, running bool) []Result {
	var out []Result
	for _, pc := range cfg.Printers {
		if pc.RawListen == "" {
			continue
		}
		r := Result{Name: fmt.Sprintf("raw port of %s %s", pc.Name, pc.RawListen)}
		_, port, _ := net.SplitHostPort(pc.RawListen)
		if running {
			host, _, _ := net.SplitHostPort(pc.RawListen)
			if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				host = "127.0.0.1"
			}
			b, err := rawStatus(net.JoinHostPort(host, port), env.NetTimeout)
			switch {
			case err != nil:
				r.Status = Fail
				r.Detail = fmt.Sprintf("the running agent's raw port does not answer: %v", unwrapOp(err))
				r.Fix = fmt.Sprintf("see the agent's log for \"raw port\" (printgate logs --grep \"raw port\"); another program may hold port %s (%s)", port, whoListensHint(port))
			case b&0x93 != 0x12:
				// Not a printer status byte at all: its fixed bits (bit 1
				// and bit 4 set, bits 0 and 7 clear) are wrong.
				r.Status = Fail
				r.Detail = fmt.Sprintf("answers DLE EOT 1 with %#02x, not a printer's status byte: another program holds the port", b)
				r.Fix = fmt.Sprintf("stop the program using port %s (%s), or give %s another raw_listen in %s", port, whoListensHint(port), pc.Name, cfg.Path)
			case b != 0x16 && pc.RawStatus == config.RawStatusPrinter:
				// raw_status = "printer" passes the printer's own state on.
				r.Detail = fmt.Sprintf("answers a POS's status query with the printer's own state (raw_status = \"printer\"): %#02x, the printer is not ready now (the agent is running)", b)
			case b != 0x16:
				r.Status = Fail
				r.Detail = fmt.Sprintf("answers DLE EOT 1 with %#02x, not a ready printer's 0x16, though raw_status answers for the spool: another program holds the port", b)
				r.Fix = fmt.Sprintf("stop the program using port %s (%s), or give %s another raw_listen in %s", port, whoListensHint(port), pc.Name, cfg.Path)
			default:
				r.Detail = "answers a POS's status query as a ready printer (the agent is running)"
			}
			out = append(out, r)
			continue
		}
		ln, err := net.Listen("tcp", pc.RawListen)
		if err == nil {
			ln.Close()
			r.Detail = "free (the agent takes it when it starts)"
		} else {
			r.Status = Fail
			r.Detail = fmt.Sprintf("cannot listen there: %v", unwrapOp(err))
			r.Fix = fmt.Sprintf("give %s a free raw_listen in %s (such as \":9101\"), or stop the program using port %s (%s)", pc.Name, cfg.Path, port, whoListensHint(port))
		}
		out = append(out, r)
	}
	return out
}

// rawStatus asks a raw port DLE EOT 1 and returns the answer byte. The
// connection carries nothing else, so it makes no job.
func rawStatus(addr string, timeout time.Duration) (byte, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{0x10, 0x04, 0x01}); err != nil {
		return 0, err
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, fmt.Errorf("no answer to DLE EOT 1: %w", err)
	}
	return b[0], nil
}

// unwrapOp drops the *net.OpError's address the line already shows.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

// isPrintgate reports whether base answers /healthz the way printgate
// does. No token is sent and the answer only identifies the program, so
// the certificate is not checked here.
func isPrintgate(ctx context.Context, env Env, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, env.NetTimeout)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // identification only; nothing secret is sent
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h map[string]json.RawMessage
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h) != nil {
		return false
	}
	_, status := h["status"]
	_, link := h["link"]
	return status && link
}

// CheckPrinters is check 4: one result per configured printer. With the
// agent running, its own view is asked through the API (probing would
// compete with it for the printer's one connection); otherwise each
// printer is probed as `printgate printers` does, in parallel, each
// bounded by env.ProbeTimeout.
func CheckPrinters(ctx context.Context, env Env, cfg *config.Config, running bool) []Result {
	if running {
		if rs, err := printersFromAgent(ctx, env, cfg); err == nil {
			return rs
		}
	}
	list := make([]probe.Printer, len(cfg.Printers))
	for i, p := range cfg.Printers {
		list[i] = probe.Printer{Name: p.Name, URL: p.URL, ExpectAnswers: p.Profile.Ack != escpos.AckNone}
	}
	out := make([]Result, len(list))
	for i, c := range probe.Check(ctx, list, true, env.ProbeTimeout) {
		out[i] = printerResult(cfg, &cfg.Printers[i], c)
	}
	return out
}

// printerResult turns one probe into a checklist line.
func printerResult(cfg *config.Config, p *config.Printer, c probe.Status) Result {
	state, detail := c.Describe()
	r := Result{Name: "printer " + p.Name, Detail: fmt.Sprintf("%s: %s", p.URL, state)}
	if detail != "" {
		r.Detail += " (" + detail + ")"
	}
	where := fmt.Sprintf("%s:%d", cfg.Path, p.URLLine)
	if c.Err != nil {
		r.Status, r.Fix = Fail, "correct the url at "+where
		return r
	}
	switch c.Check.Health {
	case escpos.HealthReady, escpos.HealthBusy:
	case escpos.HealthPaperOut:
		r.Status, r.Fix = Warn, "load paper"
	case escpos.HealthCoverOpen:
		r.Status, r.Fix = Warn, "close the printer's cover"
	case escpos.HealthError:
		r.Status, r.Fix = Fail, "clear the printer's error (paper jam, cutter, overheated head), then switch it off and on"
	case escpos.HealthNotAnswering:
		r.Status, r.Fix = Fail, fmt.Sprintf("the printer took the connection but answers no status: check it is a receipt printer and the url at %s is its printing port; for a printer that never answers set ack = \"none\" there", where)
	default: // offline, not probed
		r.Status, r.Fix = Fail, offlineFix(p, where)
	}
	return r
}

// offlineFix says what to look at for a printer that cannot be reached.
func offlineFix(p *config.Printer, where string) string {
	switch p.Target.Scheme {
	case drivers.SchemeTCP:
		return fmt.Sprintf("check the printer is on and on the network, and that %s at %s is its address (print its self-test page: hold FEED while switching it on); printgate printers --scan 192.168.1.0/24 finds printers on your network", p.Target.Addr, where)
	case drivers.SchemeSerial, drivers.SchemeUSB:
		return fmt.Sprintf("check the printer is on and its cable plugged in, and the device in the url at %s; printgate printers lists the serial ports and USB printers this PC sees", where)
	}
	return fmt.Sprintf("check the printer is on and connected, and its url at %s", where)
}

// printersFromAgent is check 4 through the running agent.
func printersFromAgent(ctx context.Context, env Env, cfg *config.Config) ([]Result, error) {
	c, err := apiclient.ForConfig(cfg, env.NetTimeout)
	if err != nil {
		return nil, err
	}
	live, err := c.Printers(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]apiclient.Printer{}
	for _, p := range live {
		byName[p.Name] = p
	}
	out := make([]Result, 0, len(cfg.Printers))
	for i := range cfg.Printers {
		p := &cfg.Printers[i]
		where := fmt.Sprintf("%s:%d", cfg.Path, p.URLLine)
		r := Result{Name: "printer " + p.Name}
		lp, ok := byName[p.Name]
		if !ok {
			r.Status, r.Detail = Warn, "in the config but not in the running agent"
			r.Fix = "restart the agent so it loads the config (printgate restart or the service)"
			out = append(out, r)
			continue
		}
		r.Detail = fmt.Sprintf("%s: %s as the running agent sees it", p.URL, lp.State)
		if lp.Queue > 0 {
			r.Detail += fmt.Sprintf(", %d task(s) waiting", lp.Queue)
		}
		if lp.FailoverTo != "" {
			r.Detail += ", its work goes to " + lp.FailoverTo
		}
		switch lp.State {
		case "READY", "BUSY":
		case "PAPER_OUT":
			r.Status, r.Fix = Warn, "load paper"
		case "COVER_OPEN":
			r.Status, r.Fix = Warn, "close the printer's cover"
		case "UNKNOWN":
			r.Status, r.Fix = Warn, "the agent has not read it yet; run doctor again in a few seconds"
		case "ERROR":
			r.Status, r.Fix = Fail, fmt.Sprintf("clear the printer's error (paper jam, cutter, overheated head) and switch it off and on; if it never answers status, set ack = \"none\" at %s", where)
		default:
			r.Status, r.Fix = Fail, offlineFix(p, where)
		}
		out = append(out, r)
	}
	return out, nil
}

// CheckDevices is check 5: read and write access to the device of each
// serial and USB printer, for the account doctor runs as.
func CheckDevices(env Env, cfg *config.Config) []Result {
	var out []Result
	var usb []drivers.Found
	usbListed := false
	for i := range cfg.Printers {
		p := &cfg.Printers[i]
		t := p.Target
		if t.Scheme != drivers.SchemeSerial && t.Scheme != drivers.SchemeUSB {
			continue
		}
		name := "device of " + p.Name
		path := t.Path
		if t.ByID() {
			if !usbListed {
				usb, _ = env.USB()
				usbListed = true
			}
			for _, f := range usb {
				if f.VendorID == t.VendorID && f.ProductID == t.ProductID && (t.SerialNumber == "" || f.SerialNumber == t.SerialNumber) {
					path = f.Name
					break
				}
			}
			if path == "" {
				out = append(out, Result{Name: name, Status: Skip, Detail: fmt.Sprintf("no USB printer %04x:%04x is attached (see the printer check)", t.VendorID, t.ProductID)})
				continue
			}
		}
		r := devicePermission(path, t.Scheme)
		r.Name = name
		out = append(out, r)
	}
	if len(out) == 0 {
		out = append(out, Result{Name: "device access", Status: Skip, Detail: "no serial or USB printers configured"})
	}
	return out
}

// CheckCloud is check 6: the cloud answers and takes the device token, on
// a handshake made the way the link makes it. No hello is sent: the cloud
// would take it as the agent connecting and could drop the running agent's
// own connection. Without an agent id (the agent never ran) the token is
// not presented, because the cloud binds a fresh token to the first agent
// id it sees.
func CheckCloud(ctx context.Context, env Env, cfg *config.Config) Result {
	r := Result{Name: "cloud"}
	if cfg.Cloud == nil {
		r.Status, r.Detail = Skip, "no [cloud] in the config: the agent runs store-only"
		return r
	}
	u := cfg.Cloud.URL
	pairFix := fmt.Sprintf("printgate pair --config %s (as the service's account)", cfg.Path)
	token, err := pair.Load(cfg.DataDir)
	if errors.Is(err, fs.ErrNotExist) {
		r.Status, r.Detail, r.Fix = Fail, "not paired: there is no device token at "+pair.TokenPath(cfg.DataDir), pairFix
		return r
	}
	if err != nil {
		r.Status, r.Detail = Fail, fmt.Sprintf("cannot read the device token: %v", err)
		r.Fix = "run doctor as the service's account or root; if the file is damaged, " + pairFix
		return r
	}
	agentID := ""
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "agent-id")); err == nil {
		agentID = strings.TrimSpace(string(b))
	}
	h := http.Header{}
	if agentID != "" {
		h.Set(wire.HeaderAuthorization, "Bearer "+token)
		h.Set(wire.HeaderAgent, agentID)
	} else {
		h.Set(wire.HeaderAgent, "printgate-doctor")
	}
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: env.NetTimeout,
		TLSClientConfig:  &tls.Config{MinVersion: tls.VersionTLS12},
		Subprotocols:     []string{wire.Subprotocol},
	}
	ctx, cancel := context.WithTimeout(ctx, env.NetTimeout)
	defer cancel()
	conn, resp, err := d.DialContext(ctx, u, h)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	netFix := fmt.Sprintf("check this PC's internet connection, DNS and firewall (outbound HTTPS), and the [cloud] url in %s", cfg.Path)
	switch {
	case err == nil:
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "printgate doctor"), time.Now().Add(time.Second))
		conn.Close()
		if agentID == "" {
			r.Status, r.Detail = Warn, u+" answers, but the device token was not checked: the agent has not run yet (no agent id in "+cfg.DataDir+")"
			r.Fix = "start the agent (printgate run or the service), then run doctor again"
			return r
		}
		r.Detail = u + ": connected; the device token is accepted"
	case resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		if agentID == "" {
			r.Status, r.Detail = Warn, u+" answers, but the device token was not checked: the agent has not run yet (no agent id in "+cfg.DataDir+")"
			r.Fix = "start the agent (printgate run or the service), then run doctor again"
			return r
		}
		r.Status = Fail
		r.Detail = fmt.Sprintf("%s refused the device token (HTTP %d)", u, resp.StatusCode)
		r.Fix = "printgate pair again (the token was revoked): " + pairFix
	case resp != nil:
		r.Status = Fail
		r.Detail = fmt.Sprintf("%s answered HTTP %d to the handshake: not the printgate cloud endpoint?", u, resp.StatusCode)
		r.Fix = fmt.Sprintf("check the [cloud] url in %s against what the cloud gave you", cfg.Path)
	default:
		r.Status = Fail
		r.Detail = fmt.Sprintf("cannot reach %s: %v", u, err)
		r.Fix = netFix
	}
	return r
}

// CheckClock is check 7: this PC's clock against the Date of the cloud's
// HTTP answer, taken at the middle of the round trip. The handshake's own
// 101 answer carries no Date, so a plain GET of the cloud url is made.
func CheckClock(ctx context.Context, env Env, cfg *config.Config) Result {
	r := Result{Name: "clock"}
	if cfg.Cloud == nil {
		r.Status, r.Detail = Skip, "no cloud to compare with"
		return r
	}
	u, err := url.Parse(cfg.Cloud.URL)
	if err != nil {
		r.Status, r.Detail = Skip, fmt.Sprintf("cloud url: %v", err)
		return r
	}
	switch u.Scheme {
	case "wss":
		u.Scheme = "https"
	case "ws":
		u.Scheme = "http"
	}
	ctx, cancel := context.WithTimeout(ctx, env.NetTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		r.Status, r.Detail = Skip, err.Error()
		return r
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyFromEnvironment,
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	sent := env.Now()
	resp, err := client.Do(req)
	if err != nil {
		r.Status, r.Detail = Skip, fmt.Sprintf("cannot ask the cloud for its time: %v", err)
		return r
	}
	got := env.Now()
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		r.Status, r.Detail = Warn, "the cloud's answer has no readable Date header; the clock was not compared"
		r.Fix = "check the clock by hand against a phone"
		return r
	}
	local := sent.Add(got.Sub(sent) / 2)
	skew := local.Sub(date)
	abs := skew.Abs()
	ahead := "ahead of"
	if skew < 0 {
		ahead = "behind"
	}
	r.Detail = fmt.Sprintf("this PC is %s %s the cloud's clock", abs.Round(time.Second), ahead)
	switch {
	case abs > clockFail:
		r.Status, r.Fix = Fail, timeSyncFix
	case abs > clockWarn:
		r.Status, r.Fix = Warn, timeSyncFix
	}
	return r
}
