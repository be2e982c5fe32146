package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"printgate/drivers"
	"printgate/drivers/escpos"
	"printgate/internal/loopback"
	"printgate/spool"
)

// Config is the agent's configuration (docs/PROTOCOL.md §2) as loaded from
// printgate.toml: every value checked, every default filled in, every
// printer's URL parsed and profile resolved, so the rest of the agent never
// meets a half-valid setting.
type Config struct {
	// Path is the file the config came from; messages about it name it.
	Path string
	// DataDir holds the spool, the log and the agent's state. Default
	// DefaultDataDir(); a relative path is relative to the config file.
	DataDir string
	// Listen is the address of the local HTTP server (intake API, manager
	// page, /metrics, /healthz). Default "127.0.0.1:8631".
	Listen string
	// TLS says whether and how the local listener serves HTTPS.
	TLS TLS
	// AllowedHosts are extra names (or addresses) a client may call the
	// listener by, in the Host header (allowed_hosts): a POS that reaches
	// the agent through a DNS name of its own. Lower case, without a port
	// or a trailing dot. Every other name is refused 421, so a web page
	// whose name an attacker points at this machine (DNS rebinding) gets
	// nothing (PROTOCOL.md §3 Host check).
	AllowedHosts []string
	// APIToken is the bearer token the POS presents to the intake API, from
	// api_token or read from api_token_file. It prints as "[redacted]".
	APIToken Secret
	// APITokenFile is the resolved api_token_file the token was read from,
	// or "" when it was written inline.
	APITokenFile string
	// Cloud is the cloud link, or nil when the [cloud] table is absent and
	// the agent runs store-only.
	Cloud *Cloud
	// Defaults are the [defaults] table: dispatch timing every printer
	// inherits unless it sets its own.
	Defaults Defaults
	// Spool sizes and ages the task store.
	Spool Spool
	// Log says how much to log and where.
	Log Log
	// Printers are the [[printers]] entries in file order; there is at
	// least one.
	Printers []Printer
}

// TLS is the local listener's HTTPS setting (docs/PROTOCOL.md §3 TLS):
// off, a self-signed certificate the agent makes and keeps in DataDir, or
// a certificate and key from files.
type TLS struct {
	// SelfSigned is tls = "self-signed".
	SelfSigned bool
	// Hosts are the extra names and addresses the self-signed certificate
	// carries (tls_hosts), besides localhost and the loopback addresses.
	Hosts []string
	// Cert and Key are tls_cert and tls_key, resolved against the config's
	// folder; both set or both empty.
	Cert, Key string
}

// On reports whether the listener serves HTTPS.
func (t TLS) On() bool { return t.SelfSigned || t.Cert != "" }

// Cloud is the [cloud] table: where the agent's outbound link goes.
type Cloud struct {
	// URL is the agent WebSocket endpoint, ws:// or wss://.
	URL string
	// AuthURL is the http(s) base of the OAuth device-flow endpoints
	// (RFC 8628) used to pair the agent.
	AuthURL string
	// OutboxMaxEvents caps the events waiting for the cloud. Past it, each
	// task's superseded events are dropped first (its latest stays), then
	// the oldest; every event lost is counted. Default 100,000.
	OutboxMaxEvents int
	// OutboxMaxAge drops events older than this that the cloud never
	// acknowledged, the same way. Default 7 days.
	OutboxMaxAge time.Duration
	// AckTimeout is how long an events batch waits for the cloud's
	// events_ack before the link sends it again on the same connection
	// (ack_timeout). Default 30 s.
	AckTimeout time.Duration
	// CancelAny lets a cloud cancel cancel tasks of every door
	// (cancel_tasks = "any"); by default ("cloud") only the tasks the cloud
	// sent, so a cloud cannot cancel a POS's order. A cloud reprint of any
	// task stays allowed, for support.
	CancelAny bool
}

// Defaults is the [defaults] table: the dispatch policy of
// docs/DESIGN.md, "Dispatch". Timeout, FailoverAfter, FailbackAfter, FailoverFailures,
// OnUnknown and Profile are per-printer defaults; the others apply to all.
type Defaults struct {
	// Timeout is a task's one absolute deadline after accept. Default 90s.
	Timeout time.Duration
	// RetryBase, RetryFactor and RetryCap shape the exponential backoff
	// between attempts: 1s, ×2, at most 15s by default.
	RetryBase, RetryCap time.Duration
	// RetryFactor multiplies the wait after each failed attempt; at least 1.
	RetryFactor float64
	// RetryJitter spreads each wait by ±this fraction (default 0.2) so a
	// store's printers do not retry in lockstep; within [0, 1].
	RetryJitter float64
	// FailoverAfter is how long a printer may be not ready, with work
	// waiting, before its tasks move to its backup. Default 15s.
	FailoverAfter time.Duration
	// FailbackAfter is how long a primary must be ready again before new
	// work returns to it. Default 60s.
	FailbackAfter time.Duration
	// FailoverFailures is how many failed attempts in a row also trigger
	// failover. Default 3.
	FailoverFailures int
	// MaxAttempts bounds the attempts of one task; 0 (the default) means
	// unlimited, bounded only by the task's deadline.
	MaxAttempts int
	// OnUnknown is what happens when nobody knows whether a ticket printed:
	// "reprint-marked" (default) or "hold".
	OnUnknown string
	// MaxUnknown is how many unknown outcomes one task may have before it
	// is held for a manager (reason REPEATED_UNKNOWN) instead of printed
	// again; at least 1, default 2. A per-printer default.
	MaxUnknown int
	// Profile is the printer profile of printers that name none. Default
	// "epson-80".
	Profile string
	// JobTimeout bounds one job on the printer: sending it and waiting for
	// its completion proof. On a serial line it is stretched by the time the
	// job's bytes take at the line's baud rate. Default 30s.
	JobTimeout time.Duration
}

// Spool is the [spool] table.
type Spool struct {
	// MaxSize caps the spool file in bytes; 0 (the default) means the
	// default cap the agent works out at start from the size of data_dir's
	// file system (spool.PlanLimits).
	MaxSize int64
	// KeepFree is file-system space the spool never uses; 0 (the default)
	// means the smaller of 256 MiB and 5% of the file system.
	KeepFree int64
	// Quota is each door's share of the spool (Doors), Rate the tasks per
	// second it takes (0: no limit); every door has both, defaults
	// included (DefaultQuotas, DefaultRates).
	Quota map[string]Quota
	Rate  map[string]float64
	// Retention is how long finished tasks keep their body and timeline.
	// Default 7 days.
	Retention time.Duration
	// DedupeWindow is how long a finished task_no is still refused as a
	// duplicate; never shorter than Retention, which is its default.
	DedupeWindow time.Duration
}

// Log is the [log] table.
type Log struct {
	// Level is the least severe level written: debug, info (default), warn
	// or error.
	Level slog.Level
	// File is the log file. Default printgate.log in DataDir; a relative
	// path is relative to the config file.
	File string
	// MaxSizeMB is the size at which the log file is rotated. Default 10.
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept. Default 5.
	MaxBackups int
}

// Printer is one [[printers]] entry, with the [defaults] it inherits
// already applied.
type Printer struct {
	// Name is what tasks name the printer by; unique, 1–64 characters of
	// [A-Za-z0-9._-].
	Name string
	// URL is the printer URL as written.
	URL string
	// Target is URL parsed.
	Target drivers.Target
	// ProfileName is the built-in profile the printer is based on.
	ProfileName string
	// Profile is that built-in profile with the entry's inline overrides
	// (dots, columns, columns_b, encoding, code_page, code_tables, beep,
	// cutter, ack)
	// applied.
	Profile escpos.Profile
	// Backup names the printer that takes over this one's tasks on
	// failover, or is "". It is another configured printer and backup chains
	// never loop.
	Backup string
	// OnUnknown is "reprint-marked" or "hold" (see Defaults.OnUnknown).
	OnUnknown string
	// MaxUnknown: see Defaults.MaxUnknown.
	MaxUnknown int
	// Timeout, JobTimeout, FailoverAfter, FailbackAfter and
	// FailoverFailures are the printer's own values or the [defaults].
	Timeout, JobTimeout, FailoverAfter, FailbackAfter time.Duration
	// FailoverFailures: see Defaults.FailoverFailures.
	FailoverFailures int
	// RawListen, when set, is the address of the printer's raw port: a
	// listener that takes print streams as a port-9100 printer does, so a
	// POS that cannot be changed prints through the spool (docs/PROTOCOL.md
	// "Raw port"). Off when empty.
	RawListen string
	// RawIdleGap is the quiet time that ends a job on a raw connection the
	// POS keeps open; default 2s.
	RawIdleGap time.Duration
	// RawDuplicateWindow is how long a byte-identical raw job counts as a
	// POS retry and prints marked POSSIBLE DUPLICATE; default 10s, 0 off.
	RawDuplicateWindow time.Duration
	// RawStatus is what the raw port's status answers (DLE EOT, GS r) say:
	// RawStatusSpooled (the default) a ready printer, since the job is
	// spooled whatever the printer does; RawStatusPrinter the printer's own
	// state (offline, paper out), for a POS that wants to show it.
	RawStatus string
	// RawFirstByteTimeout closes a raw connection that sent nothing to
	// print (only status queries, padding, settings, or nothing) this long
	// after it came; default 10s.
	RawFirstByteTimeout time.Duration
	// RawMaxPerAddress bounds the raw connections from one address read at
	// once while they carry no job; as many more wait, further ones are
	// refused; default 2.
	RawMaxPerAddress int
	// RawAllow, when not empty, is the allow-list of POS addresses and
	// ranges (raw_allow); connections from any other address are refused.
	RawAllow []netip.Prefix
	// Line is the line of the entry's [[printers]] header, so later
	// messages about the printer can point into the file.
	Line int
	// URLLine is the line of the entry's url key (Line when it is not
	// found), where a message about the printer's address points, as the
	// config's own errors do.
	URLLine int
}

// Where is "FILE:LINE" of a key of the config (a dotted path: "listen",
// "cloud.url"), or the file's name alone when the key is not written in
// it (a default) or the file cannot be read again: the start of a message
// in the config errors' standard. It reads the file again, so it is for
// messages, not for a hot path.
func (c *Config) Where(key string) string {
	data, err := os.ReadFile(c.Path)
	if err != nil {
		return c.Path
	}
	if n := scanLines(string(data))[key]; n > 0 {
		return fmt.Sprintf("%s:%d", c.Path, n)
	}
	return c.Path
}

// Printer returns the configured printer called name.
func (c *Config) Printer(name string) (*Printer, bool) {
	for i := range c.Printers {
		if c.Printers[i].Name == name {
			return &c.Printers[i], true
		}
	}
	return nil, false
}

// Load reads and checks the config file at path. A file that cannot
// be used yields Errors listing every problem with its line.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no config at %s: %w; copy the commented sample (testdata/config/printgate.toml in the source, or the one installed with printgate) there, set its [[printers]] and write a token with `printgate token > %s`, or name another file with --config", path, err, filepath.Join(filepath.Dir(path), "api-token.txt"))
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse checks config text that came from path. path names the file
// in messages, and relative paths inside the config (api_token_file,
// data_dir, the log file) are taken relative to its directory, because a
// service's working directory is not something an installer controls.
// Problems are returned together as Errors, in line order.
func Parse(path string, data []byte) (*Config, error) {
	p := &parser{file: path, dir: filepath.Dir(path)}
	var raw map[string]any
	p.lastLine = max(1, strings.Count(strings.TrimRight(string(data), "\r\n"), "\n")+1)
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, p.syntaxError(err, string(data))
	}
	p.lines = scanLines(string(data))
	cfg := p.config(raw)
	if len(p.errs) > 0 {
		p.errs.sortByLine()
		return nil, p.errs
	}
	return cfg, nil
}

// RawStatusSpooled and RawStatusPrinter are the choices of raw_status
// (Printer.RawStatus); spooled is the default.
const (
	RawStatusSpooled = "spooled"
	RawStatusPrinter = "printer"
)

// Built-in values of the config; docs/PROTOCOL.md §2 documents them.
const (
	defaultListen = "127.0.0.1:8631"
	// DefaultRawIdleGap and DefaultRawDuplicateWindow are the raw port's
	// job boundary and retry window (Printer.RawIdleGap,
	// Printer.RawDuplicateWindow) when a printer does not set them.
	DefaultRawIdleGap         = 2 * time.Second
	DefaultRawDuplicateWindow = 10 * time.Second
	onUnknownReprint          = "reprint-marked"
	onUnknownHold             = "hold"
	configMinSpoolSize        = 8 << 20 // the spool keeps 4 MiB in reserve
	defaultLogName            = "printgate.log"
	defaultRetention          = 7 * 24 * time.Hour
	// defaultOutboxEvents and defaultOutboxAge bound the events
	// kept for an unreachable cloud: about a week of a busy store.
	defaultOutboxEvents = 100_000
	defaultOutboxAge    = 7 * 24 * time.Hour
	// defaultAckTimeout is the link's own default (link.DefaultAckTimeout):
	// half the silence timeout, far above a cloud's normal ack time.
	defaultAckTimeout = 30 * time.Second
	defaultLogSizeMB  = 10
	defaultLogBackups = 5
)

// DefaultRawFirstByteTimeout and DefaultRawMaxPerAddress bound the raw
// connections that carry no job (Printer.RawFirstByteTimeout,
// Printer.RawMaxPerAddress) when a printer does not set them; PROTOCOL.md
// "Raw port" documents them.
const (
	DefaultRawFirstByteTimeout = 10 * time.Second
	DefaultRawMaxPerAddress    = 2
)

// topKeys are the keys allowed at the top of the file.
var topKeys = []string{"data_dir", "listen", "allowed_hosts", "api_token", "api_token_file", "tls", "tls_hosts", "tls_cert", "tls_key", "cloud", "defaults", "spool", "log", "printers"}

// parser collects the problems of one file while reading it.
type parser struct {
	file     string
	dir      string
	lines    lineIndex
	lastLine int
	errs     Errors
}

func (p *parser) add(line int, msg string) {
	p.errs = append(p.errs, Error{File: p.file, Line: line, Msg: msg})
}

// syntaxError turns a TOML parse failure of src into a Errors with its
// line; nothing else can be checked in a file that does not parse.
func (p *parser) syntaxError(err error, src string) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := "this is not valid TOML: " + pe.Message
		if strings.Contains(pe.Message, "cannot contain newlines") {
			msg += " (is a closing quote missing?)"
		}
		// The line is counted from the error's byte offset: the parser's
		// own line number is one short for a string left open before a
		// CRLF line end (0 on the first line of a file saved on Windows),
		// and one past the line for an error at its end.
		line := pe.Position.Line
		if at := pe.Position.Start; at >= 0 && at <= len(src) && (at > 0 || line <= 1) {
			line = strings.Count(src[:at], "\n") + 1
		}
		return Errors{{File: p.file, Line: min(max(line, 1), p.lastLine), Msg: msg}}
	}
	return Errors{{File: p.file, Line: 1, Msg: "this is not valid TOML: " + err.Error()}}
}

// abs resolves a path written in the config against the config's directory.
func (p *parser) abs(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(p.dir, path)
}

func (p *parser) config(raw map[string]any) *Config {
	top := &table{p: p, m: raw}
	cfg := &Config{
		Path:    p.file,
		DataDir: DefaultDataDir(),
		Listen:  defaultListen,
		Defaults: Defaults{
			Timeout:          90 * time.Second,
			RetryBase:        time.Second,
			RetryCap:         15 * time.Second,
			RetryFactor:      2,
			RetryJitter:      0.2,
			FailoverAfter:    15 * time.Second,
			FailbackAfter:    60 * time.Second,
			FailoverFailures: 3,
			OnUnknown:        onUnknownReprint,
			MaxUnknown:       2,
			Profile:          "epson-80",
			JobTimeout:       30 * time.Second,
		},
		Spool: Spool{Retention: defaultRetention, Quota: DefaultQuotas(), Rate: DefaultRates()},
		Log:   Log{Level: slog.LevelInfo, MaxSizeMB: defaultLogSizeMB, MaxBackups: defaultLogBackups},
	}
	if s, ok := top.str("data_dir"); ok {
		if strings.TrimSpace(s) == "" {
			top.errf("data_dir", "is empty: leave it out for the default %s, or name a folder", DefaultDataDir())
		} else {
			cfg.DataDir = p.abs(s)
		}
	}
	if s, ok := top.str("listen"); ok {
		if err := checkListen(s); err != nil {
			top.errf("listen", "%v", err)
		} else {
			cfg.Listen = s
		}
	}
	p.allowedHosts(top, cfg)
	p.apiToken(top, cfg)
	p.tls(top, cfg)
	if t := top.table("cloud", "[cloud]"); t != nil {
		cfg.Cloud = p.cloud(t)
	}
	defaultProfileOK := true
	if t := top.table("defaults", "[defaults]"); t != nil {
		defaultProfileOK = p.defaults(t, &cfg.Defaults)
	}
	if t := top.table("spool", "[spool]"); t != nil {
		p.spool(t, &cfg.Spool)
	}
	if cfg.Spool.DedupeWindow == 0 {
		cfg.Spool.DedupeWindow = cfg.Spool.Retention
	}
	if t := top.table("log", "[log]"); t != nil {
		p.log(t, &cfg.Log)
	}
	if cfg.Log.File == "" {
		cfg.Log.File = filepath.Join(cfg.DataDir, defaultLogName)
	}
	cfg.Printers = p.printers(top, &cfg.Defaults, defaultProfileOK, cfg.Listen)
	top.finish()
	return cfg
}

// checkListen accepts what net.Listen will: host:port with a port
// number, the host optional.
func checkListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not an address to listen on: write \":8631\" for every network interface or \"127.0.0.1:8631\" for this computer only", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q has port %q: the port must be a number from 1 to 65535, such as 8631", s, port)
	}
	return nil
}

// allowedHosts reads allowed_hosts: host names or IP addresses as a Host
// header carries them, without scheme, port or path, since the check
// ignores the port and a name with one would never match.
func (p *parser) allowedHosts(top *table, cfg *Config) {
	v, ok := top.get("allowed_hosts")
	if !ok {
		return
	}
	list, isList := v.([]any)
	if !isList {
		top.wrongType("allowed_hosts", `a list of host names, such as ["pos.local"]`, v)
		return
	}
	for _, h := range list {
		s, ok := h.(string)
		if !ok {
			top.wrongType("allowed_hosts", `a list of host names in quotes, such as ["pos.local"]`, v)
			return
		}
		name, err := checkAllowedHost(s)
		if err != nil {
			top.errf("allowed_hosts", "%v", err)
			continue
		}
		if !slices.Contains(cfg.AllowedHosts, name) {
			cfg.AllowedHosts = append(cfg.AllowedHosts, name)
		}
	}
}

// checkAllowedHost returns entry as the Host check compares it (lower
// case, no trailing dot, an IPv6 address without brackets), or why it can
// never match a Host header.
func checkAllowedHost(entry string) (string, error) {
	s := strings.TrimSpace(entry)
	switch {
	case s == "":
		return "", errors.New("has an empty name: list host names such as \"pos.local\"")
	case strings.Contains(s, "://"):
		return "", fmt.Errorf("%q is a URL: list the host name only, such as %q", entry, hostOfURL(s))
	case strings.Contains(s, "*"):
		return "", fmt.Errorf("%q has a wildcard: list each name the POS uses, such as \"pos.local\"", entry)
	case strings.ContainsAny(s, "/?#@ \t"):
		return "", fmt.Errorf("%q is not a host name: list names such as \"pos.local\" or addresses such as \"192.168.1.10\"", entry)
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap().String(), nil
	}
	if _, port, err := net.SplitHostPort(s); err == nil {
		return "", fmt.Errorf("%q has a port (%s): list the name only, any port is accepted", entry, port)
	}
	if strings.Contains(s, ":") {
		return "", fmt.Errorf("%q is not a host name: list names such as \"pos.local\" or addresses such as \"192.168.1.10\"", entry)
	}
	return strings.TrimSuffix(strings.ToLower(s), "."), nil
}

// hostOfURL is the host of a URL someone wrote instead of a name, for the
// message that asks for the name.
func hostOfURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return "pos.local"
}

// apiToken reads exactly one of api_token and api_token_file.
// MinTokenLength is the shortest API token the agent accepts: the local API
// is reachable from the shop's Wi-Fi, where guests' phones are too.
const MinTokenLength = 24

func (p *parser) apiToken(top *table, cfg *Config) {
	tok, hasTok := top.str("api_token")
	file, hasFile := top.str("api_token_file")
	_, wroteTok := top.m["api_token"]
	_, wroteFile := top.m["api_token_file"]
	switch {
	case wroteTok && wroteFile:
		top.errf("api_token_file", "api_token is also set; use one or the other, not both, so it is clear which token the POS must send")
		return
	case !wroteTok && !wroteFile:
		p.add(1, `no api_token: the POS needs a token to send tickets; add api_token = "..." or api_token_file = "..." at the top of the file`)
		return
	case hasTok:
		tok = strings.TrimSpace(tok)
		if tok == "" {
			top.errf("api_token", "is empty: set the token the POS sends, or use api_token_file")
			return
		}
		if len(tok) < MinTokenLength {
			top.errf("api_token", "is %d characters: too easy to guess for anyone on the shop's network; use at least %d (`printgate token` prints a new one)", len(tok), MinTokenLength)
			return
		}
		cfg.APIToken = Secret(tok)
	case hasFile:
		if strings.TrimSpace(file) == "" {
			top.errf("api_token_file", "is empty: name the file that holds the token")
			return
		}
		path := p.abs(file)
		data, err := readTokenFile(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			top.errf("api_token_file", "cannot read %s: %v", path, err)
			return
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			top.errf("api_token_file", "%s is empty: put the token the POS sends in it", path)
			return
		}
		if len(tok) < MinTokenLength {
			top.errf("api_token_file", "%s holds a %d-character token: too easy to guess for anyone on the shop's network; use at least %d (`printgate token > %s` writes a new one)", path, len(tok), MinTokenLength, path)
			return
		}
		cfg.APIToken, cfg.APITokenFile = Secret(tok), path
	}
}

// tls reads tls, tls_hosts, tls_cert and tls_key.
func (p *parser) tls(top *table, cfg *Config) {
	if s, ok := top.str("tls"); ok {
		switch s {
		case "self-signed":
			cfg.TLS.SelfSigned = true
		case "off":
		default:
			top.errf("tls", "%q is not a TLS mode: use \"self-signed\" (the agent makes its own certificate) or \"off\", or name tls_cert and tls_key", s)
		}
	}
	if v, ok := top.get("tls_hosts"); ok {
		list, isList := v.([]any)
		for _, h := range list {
			if s, ok := h.(string); ok && strings.TrimSpace(s) != "" {
				cfg.TLS.Hosts = append(cfg.TLS.Hosts, strings.TrimSpace(s))
			} else {
				isList = false
			}
		}
		switch {
		case !isList:
			top.wrongType("tls_hosts", `a list of host names or addresses, such as ["pos-pc.local", "192.168.1.10"]`, v)
		case !cfg.TLS.SelfSigned:
			top.errf("tls_hosts", "only applies with tls = \"self-signed\": a certificate from tls_cert names its own hosts")
		}
	}
	cert, hasCert := top.str("tls_cert")
	key, hasKey := top.str("tls_key")
	switch {
	case hasCert != hasKey && hasCert:
		top.errf("tls_cert", "needs tls_key too: the certificate's private key file")
	case hasCert != hasKey:
		top.errf("tls_key", "needs tls_cert too: the certificate file (PEM)")
	case hasCert && cfg.TLS.SelfSigned:
		top.errf("tls_cert", "and tls = \"self-signed\" are both set: use one or the other")
	case hasCert:
		cfg.TLS.Cert, cfg.TLS.Key = p.abs(cert), p.abs(key)
	}
}

func (p *parser) cloud(t *table) *Cloud {
	c := &Cloud{OutboxMaxEvents: defaultOutboxEvents, OutboxMaxAge: defaultOutboxAge, AckTimeout: defaultAckTimeout}
	t.intAtLeast("outbox_max_events", 1000, "events kept for the cloud while it is unreachable", &c.OutboxMaxEvents)
	t.positive("outbox_max_age", &c.OutboxMaxAge)
	t.positive("ack_timeout", &c.AckTimeout)
	if s, ok := t.str("cancel_tasks"); ok {
		switch s {
		case "cloud":
		case "any":
			c.CancelAny = true
		default:
			t.errf("cancel_tasks", "is %q; it is \"cloud\" (a cloud cancel reaches only the tasks the cloud sent, the default) or \"any\" (every task, a POS's too)", s)
		}
	}
	if s, ok := t.str("url"); ok {
		if err := checkURL(s, "ws", "wss"); err != nil {
			t.errf("url", "%v; it is the agent link the cloud gave you, such as \"wss://print.example.com/agent/v1\"", err)
		} else if err := checkClear(s, "ws", "wss"); err != nil {
			t.errf("url", "%v: the device token would cross the network in clear", err)
		}
		c.URL = s
	} else if _, wrote := t.m["url"]; !wrote {
		p.add(t.line(""), `[cloud] has no url: add url = "wss://..." as given by the cloud, or remove the [cloud] table to run store-only`)
	}
	if s, ok := t.str("auth_url"); ok {
		if err := checkURL(s, "http", "https"); err != nil {
			t.errf("auth_url", "%v; it is the pairing address the cloud gave you, such as \"https://print.example.com/oauth\"", err)
		} else if err := checkClear(s, "http", "https"); err != nil {
			t.errf("auth_url", "%v: the pairing codes and the device token it issues would cross the network in clear", err)
		}
		c.AuthURL = s
	} else if _, wrote := t.m["auth_url"]; !wrote {
		p.add(t.line(""), `[cloud] has no auth_url: add auth_url = "https://..." as given by the cloud, so the agent can be paired`)
	}
	t.finish()
	return c
}

// checkURL requires an absolute URL with one of schemes and a host.
func checkURL(s string, schemes ...string) error {
	want := strings.Join(schemes, ":// or ") + "://"
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a web address", s)
	}
	if !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		return fmt.Errorf("%q must start with %s", s, want)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q has no server name after %s://", s, u.Scheme)
	}
	return nil
}

// checkClear refuses the clear scheme (http, ws) to a host that is not
// loopback: a cloud address in clear is fine for a reference cloud on the
// same machine, never across a network. s has passed checkURL.
func checkClear(s, clear, secure string) error {
	u, _ := url.Parse(s)
	if !strings.EqualFold(u.Scheme, clear) || loopback.Host(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%q is %s:// to %s, which is not this machine: use %s:// (%s:// is allowed only to localhost, 127.0.0.1 or [::1])", s, clear, u.Hostname(), secure, clear)
}

// defaults reads [defaults] into d and reports whether its profile exists,
// so printers inheriting a bad one are not each blamed for it.
func (p *parser) defaults(t *table, d *Defaults) (profileOK bool) {
	t.positive("timeout", &d.Timeout)
	t.positive("job_timeout", &d.JobTimeout)
	t.positive("retry_base", &d.RetryBase)
	t.positive("retry_cap", &d.RetryCap)
	t.positive("failover_after", &d.FailoverAfter)
	t.positive("failback_after", &d.FailbackAfter)
	if f, ok := t.float("retry_factor"); ok {
		if f < 1 {
			t.errf("retry_factor", "%v is below 1: waits between retries must not shrink (2 doubles each wait)", f)
		} else {
			d.RetryFactor = f
		}
	}
	if f, ok := t.float("retry_jitter"); ok {
		if f < 0 || f > 1 {
			t.errf("retry_jitter", "%v must be between 0 and 1 (0.2 spreads each wait by ±20%%)", f)
		} else {
			d.RetryJitter = f
		}
	}
	t.intAtLeast("failover_failures", 1, "failed attempts in a row before tickets move to the backup", &d.FailoverFailures)
	t.intAtLeast("max_attempts", 0, "0 means retry until the ticket's timeout", &d.MaxAttempts)
	if s, ok := t.str("on_unknown"); ok {
		if checkOnUnknown(t, s) {
			d.OnUnknown = s
		}
	}
	t.intAtLeast("max_unknown", 1, maxUnknownHint, &d.MaxUnknown)
	profileOK = true
	if s, ok := t.str("profile"); ok {
		if _, err := escpos.LookupProfile(s); err != nil {
			profileError(t, s, err)
			profileOK = false
		} else {
			d.Profile = s
		}
	}
	if d.RetryCap < d.RetryBase {
		key := "retry_cap"
		if _, wrote := t.m[key]; !wrote {
			key = "retry_base"
		}
		t.errf(key, "retry_cap (%s) is shorter than retry_base (%s): the longest wait between retries must be at least the first", formatDuration(d.RetryCap), formatDuration(d.RetryBase))
	}
	t.finish()
	return profileOK
}

// maxUnknownHint is what max_unknown below 1 is told.
const maxUnknownHint = "unknown outcomes of one ticket before it is held for a manager"

func checkOnUnknown(t *table, s string) bool {
	if s == onUnknownReprint || s == onUnknownHold {
		return true
	}
	t.errf("on_unknown", `%q is not a choice: use "reprint-marked" (print again with a POSSIBLE DUPLICATE banner) or "hold" (wait for a manager to decide)`, s)
	return false
}

func profileError(t *table, name string, err error) {
	if s := suggest(name, escpos.ProfileNames()); s != "" {
		t.errf("profile", "%v; did you mean %q?", err, s)
		return
	}
	t.errf("profile", "%v", err)
}

func (p *parser) spool(t *table, s *Spool) {
	if n, ok := t.size("max_size"); ok {
		v, _ := t.get("max_size")
		switch {
		case n < 0:
			t.errf("max_size", "%v must not be negative (0 means the default: 10%% of the disk, from 64MiB to 1GiB)", v)
		case n > 0 && n < configMinSpoolSize:
			t.errf("max_size", "%v is too small: the spool keeps 4MiB in reserve for tickets already accepted; use at least \"8MiB\", or 0 for the default", v)
		default:
			s.MaxSize = n
		}
	}
	if n, ok := t.size("keep_free"); ok {
		if n < 0 {
			v, _ := t.get("keep_free")
			t.errf("keep_free", "%v must not be negative (0 means the default: 256MiB or 5%% of the disk, the smaller)", v)
		} else {
			s.KeepFree = n
		}
	}
	p.doors(t, s)
	t.positive("retention", &s.Retention)
	t.positive("dedupe_window", &s.DedupeWindow)
	if s.DedupeWindow != 0 && s.DedupeWindow < s.Retention {
		t.errf("dedupe_window", "%s is shorter than retention (%s): a ticket number must stay known at least as long as the ticket is kept, or a resent ticket could print twice", formatDuration(s.DedupeWindow), formatDuration(s.Retention))
	}
	t.finish()
}

func (p *parser) log(t *table, l *Log) {
	if s, ok := t.str("level"); ok {
		levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
		if lv, ok := levels[strings.ToLower(s)]; ok {
			l.Level = lv
		} else {
			t.errf("level", `%q is not a log level: use "debug", "info", "warn" or "error"`, s)
		}
	}
	if s, ok := t.str("file"); ok {
		if strings.TrimSpace(s) == "" {
			t.errf("file", "is empty: leave it out to log to %s in data_dir, or name a file", defaultLogName)
		} else {
			l.File = p.abs(s)
		}
	}
	t.intAtLeast("max_size_mb", 1, "megabytes before the log file is rotated", &l.MaxSizeMB)
	t.intAtLeast("max_backups", 0, "rotated log files to keep", &l.MaxBackups)
	t.finish()
}

// printers reads every [[printers]] entry, then checks what involves more
// than one: unique names, one entry per physical printer, backups, raw
// ports that do not share a port with listen or each other.
func (p *parser) printers(top *table, d *Defaults, defaultProfileOK bool, listen string) []Printer {
	v, ok := top.get("printers")
	if !ok {
		// A fresh install may not have found a printer yet: the agent then
		// serves its page, where a manager adds one, and says so in its log.
		return nil
	}
	var entries []map[string]any
	switch x := v.(type) {
	case []map[string]any:
		entries = x
	case []any:
		for _, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				top.wrongType("printers", "a list of [[printers]] tables", e)
				return nil
			}
			entries = append(entries, m)
		}
	case map[string]any:
		top.errf("printers", "write [[printers]] with double brackets, once before each printer's keys")
		return nil
	default:
		top.wrongType("printers", "one or more [[printers]] tables", v)
		return nil
	}
	if len(entries) == 0 {
		return nil
	}

	out := make([]Printer, 0, len(entries))
	tables := make([]*table, 0, len(entries))
	for i, m := range entries {
		pc, t := p.printer(i, m, d, defaultProfileOK)
		out = append(out, pc)
		tables = append(tables, t)
	}

	byName := map[string]int{}
	byTarget := map[string]int{}
	for i := range out {
		pc, t := &out[i], tables[i]
		if pc.Name != "" {
			if j, dup := byName[pc.Name]; dup {
				t.errf("name", "%q is already the name of the printer at line %d; each printer needs its own name", pc.Name, out[j].Line)
			} else {
				byName[pc.Name] = i
			}
		}
		if pc.Target.Scheme != "" {
			key := targetKey(pc.Target)
			if j, dup := byTarget[key]; dup {
				t.errf("url", "%q is the same printer as %s at line %d: list each physical printer once (to send one printer's tickets to another, use backup)", pc.URL, printerLabel(&out[j], j), out[j].Line)
			} else {
				byTarget[key] = i
			}
		}
	}
	p.checkBackups(out, tables, byName)
	for i := range out {
		pc, t := &out[i], tables[i]
		if pc.RawListen == "" {
			continue
		}
		if sameListener(pc.RawListen, listen) {
			t.errf("raw_listen", "%q takes the port of listen (%q), where the local API and the manager page are: give the raw port its own port, such as 9101", pc.RawListen, listen)
			continue
		}
		for j := 0; j < i; j++ {
			if out[j].RawListen != "" && sameListener(pc.RawListen, out[j].RawListen) {
				t.errf("raw_listen", "%q is already the raw port of %s at line %d: each printer needs its own port", pc.RawListen, printerLabel(&out[j], j), out[j].Line)
				break
			}
		}
	}
	return out
}

// printer reads one [[printers]] entry (i is its 0-based position).
func (p *parser) printer(i int, m map[string]any, d *Defaults, defaultProfileOK bool) (Printer, *table) {
	path := "printers." + strconv.Itoa(i)
	t := &table{p: p, path: path, label: fmt.Sprintf("[[printers]] #%d", i+1), m: m}
	pc := Printer{
		Line:             p.lines.find(path),
		ProfileName:      d.Profile,
		OnUnknown:        d.OnUnknown,
		MaxUnknown:       d.MaxUnknown,
		Timeout:          d.Timeout,
		JobTimeout:       d.JobTimeout,
		FailoverAfter:    d.FailoverAfter,
		FailbackAfter:    d.FailbackAfter,
		FailoverFailures: d.FailoverFailures,

		RawIdleGap:          DefaultRawIdleGap,
		RawDuplicateWindow:  DefaultRawDuplicateWindow,
		RawStatus:           RawStatusSpooled,
		RawFirstByteTimeout: DefaultRawFirstByteTimeout,
		RawMaxPerAddress:    DefaultRawMaxPerAddress,
	}
	if name, ok := t.str("name"); ok {
		if spool.ValidPrinterName(name) != nil {
			t.errf("name", "%q cannot be a printer name: use 1 to 64 letters, digits, dots, dashes or underscores, without spaces (for example \"kitchen\" or \"bar-2\")", name)
		} else {
			pc.Name = name
			t.label = fmt.Sprintf("[[printers]] %q", name)
		}
	} else if _, wrote := m["name"]; !wrote {
		p.add(pc.Line, t.label+` has no name: add name = "..." (the name tickets are sent to, such as "kitchen")`)
	}
	pc.URLLine = t.line("url")
	if u, ok := t.str("url"); ok {
		pc.URL = u
		if tgt, err := drivers.ParseURL(u); err != nil {
			t.errf("url", "%v", err)
		} else {
			pc.Target = tgt
		}
	} else if _, wrote := m["url"]; !wrote {
		p.add(pc.Line, t.label+` has no url: add url = "..." saying how to reach the printer, such as "tcp://192.168.1.50:9100" or "usb:///dev/usb/lp0"`)
	}

	profileOK := defaultProfileOK
	if s, ok := t.str("profile"); ok {
		pc.ProfileName = s
		profileOK = true
	} else if _, wrote := m["profile"]; wrote {
		profileOK = false
	}
	var prof escpos.Profile
	if profileOK {
		var err error
		if prof, err = escpos.LookupProfile(pc.ProfileName); err != nil {
			profileError(t, pc.ProfileName, err)
			profileOK = false
		}
	}
	// The usable overrides are checked even when another one is bad, so
	// every problem of the entry is reported in one go.
	if o, ok := overrides(t); profileOK {
		if resolved, err := prof.With(o); err != nil {
			overrideErrors(t, pc.Line, pc.ProfileName, err)
		} else if ok {
			pc.Profile = resolved
		}
	}

	if s, ok := t.str("backup"); ok {
		pc.Backup = s
	}
	if s, ok := t.str("on_unknown"); ok && checkOnUnknown(t, s) {
		pc.OnUnknown = s
	}
	t.intAtLeast("max_unknown", 1, maxUnknownHint, &pc.MaxUnknown)
	t.positive("timeout", &pc.Timeout)
	t.positive("job_timeout", &pc.JobTimeout)
	t.positive("failover_after", &pc.FailoverAfter)
	t.positive("failback_after", &pc.FailbackAfter)
	t.intAtLeast("failover_failures", 1, "failed attempts in a row before tickets move to the backup", &pc.FailoverFailures)
	if s, ok := t.str("raw_listen"); ok {
		if err := checkListen(s); err != nil {
			t.errf("raw_listen", "%v", err)
		} else {
			pc.RawListen = s
		}
	}
	t.positive("raw_idle_gap", &pc.RawIdleGap)
	// "0s" turns the window off, for a POS that prints copies on purpose.
	if d, ok := t.duration("raw_duplicate_window"); ok {
		if d < 0 {
			t.errf("raw_duplicate_window", `%s is negative: use "0s" to turn the duplicate window off, or a duration such as "10s"`, formatDuration(d))
		} else {
			pc.RawDuplicateWindow = d
		}
	}
	if s, ok := t.str("raw_status"); ok {
		switch s {
		case RawStatusSpooled, RawStatusPrinter:
			pc.RawStatus = s
		default:
			t.errf("raw_status", `%q is not a choice: use "spooled" (answer the POS as a ready printer: its job is spooled whatever the printer does) or "printer" (answer with the printer's own state: offline, paper out)`, s)
		}
	}
	t.positive("raw_first_byte_timeout", &pc.RawFirstByteTimeout)
	t.intAtLeast("raw_max_per_address", 1, "the connections one address may have open on the raw port before they send a job", &pc.RawMaxPerAddress)
	pc.RawAllow = rawAllow(t)
	t.finish()
	return pc, t
}

// rawAllow reads raw_allow, the list of addresses and CIDR ranges a
// printer's raw port serves.
func rawAllow(t *table) []netip.Prefix {
	v, ok := t.get("raw_allow")
	if !ok {
		return nil
	}
	const example = `["192.168.1.0/24", "10.0.0.5"]`
	list, isList := v.([]any)
	if !isList {
		t.wrongType("raw_allow", "a list of POS addresses or CIDR ranges in quotes, such as "+example, v)
		return nil
	}
	if len(list) == 0 {
		t.errf("raw_allow", "is empty, which would refuse every POS: list the addresses that print here, such as %s, or remove raw_allow to let any address print", example)
		return nil
	}
	var out []netip.Prefix
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			t.wrongType("raw_allow", "a list of POS addresses or CIDR ranges in quotes, such as "+example, v)
			return nil
		}
		p, err := parseAllow(strings.TrimSpace(s))
		if err != nil {
			t.errf("raw_allow", "%q is not an address or a CIDR range: write an address such as \"192.168.1.20\" or a range such as \"192.168.1.0/24\"", s)
			continue
		}
		out = append(out, p)
	}
	return out
}

// parseAllow reads one raw_allow entry: an address (a range of one) or a
// CIDR range. IPv4 written as IPv6 (::ffff:a.b.c.d) is the IPv4 address, as
// the port counts its clients.
func parseAllow(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("parse raw_allow range %q: %w", s, err)
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse raw_allow address %q: %w", s, err)
	}
	a = a.WithZone("").Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// sameListener reports whether two listen addresses would claim the same
// port: the same port on the same host, or on any host when one of them
// listens on every interface.
func sameListener(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	wild := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wild(ha) || wild(hb)
}

// overrides reads the inline profile overrides of a printer entry; ok
// is false when one of them is unusable (already reported, and left out of
// o).
func overrides(t *table) (o escpos.ProfileOverrides, ok bool) {
	ok = true
	ints := []struct {
		key string
		dst **int
	}{{"dots", &o.Dots}, {"columns", &o.Columns}, {"columns_b", &o.ColumnsB}, {"code_page", &o.CodePage}}
	for _, f := range ints {
		if n, good := t.int(f.key); good {
			*f.dst = &n
		} else if _, wrote := t.m[f.key]; wrote {
			ok = false
		}
	}
	if s, good := t.str("encoding"); good {
		o.Encoding = &s
	} else if _, wrote := t.m["encoding"]; wrote {
		ok = false
	}
	if s, good := t.str("code_tables"); good {
		o.CodeTables = &s
	} else if _, wrote := t.m["code_tables"]; wrote {
		ok = false
	}
	enums := []struct {
		key string
		dst interface{ UnmarshalText([]byte) error }
	}{
		{"beep", new(escpos.BeepDialect)},
		{"cutter", new(escpos.Cutter)},
		{"ack", new(escpos.AckMode)},
	}
	for _, f := range enums {
		s, good := t.str(f.key)
		if !good {
			if _, wrote := t.m[f.key]; wrote {
				ok = false
			}
			continue
		}
		if err := f.dst.UnmarshalText([]byte(s)); err != nil {
			t.errf(f.key, "%v", err)
			ok = false
			continue
		}
		switch v := f.dst.(type) {
		case *escpos.BeepDialect:
			o.Beep = v
		case *escpos.Cutter:
			o.Cutter = v
		case *escpos.AckMode:
			o.Ack = v
		}
	}
	return o, ok
}

// overrideMsgKeys maps the start of a Profile.Validate message to the
// override key it is about; columns_b comes before columns for that reason.
var overrideMsgKeys = []struct{ prefix, key string }{
	{"dots", "dots"}, {"columns_b", "columns_b"}, {"columns", "columns"},
	{"code page", "code_page"}, {"unknown encoding", "encoding"}, {"unknown code tables", "code_tables"},
}

// overrideErrors reports each problem Profile.With found, at the line
// of the override it concerns when that can be told from the message.
func overrideErrors(t *table, header int, profile string, err error) {
	parts := []error{err}
	if j, ok := errors.Unwrap(err).(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	for _, e := range parts {
		msg := e.Error()
		key := ""
		for _, k := range overrideMsgKeys {
			if strings.HasPrefix(msg, k.prefix) {
				key = k.key
				break
			}
		}
		if _, wrote := t.m[key]; key != "" && wrote {
			t.errf(key, "%s (overriding profile %q)", msg, profile)
			continue
		}
		t.p.add(header, fmt.Sprintf("%s: profile %q with this printer's overrides is not usable: %s", t.label, profile, msg))
	}
}

// targetKey identifies the physical printer behind a target: host
// names and Windows queue names ignore case, device paths do not.
func targetKey(t drivers.Target) string {
	switch t.Scheme {
	case drivers.SchemeTCP, drivers.SchemeWinspool:
		return strings.ToLower(t.String())
	case drivers.SchemeSerial:
		return "serial://" + t.Path // one device, whatever the line settings
	}
	return t.String()
}

func printerLabel(pc *Printer, i int) string {
	if pc.Name != "" {
		return fmt.Sprintf("%q", pc.Name)
	}
	return fmt.Sprintf("[[printers]] #%d", i+1)
}

// checkBackups requires every backup to be another configured printer and
// the backup chains to end: a loop would move tickets round it forever.
func (p *parser) checkBackups(out []Printer, tables []*table, byName map[string]int) {
	next := make([]int, len(out)) // index of the backup, or -1
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for i := range out {
		next[i] = -1
		b, t := out[i].Backup, tables[i]
		if b == "" {
			if _, wrote := t.m["backup"]; wrote {
				t.errf("backup", `is empty: name another printer, or leave backup out`)
			}
			continue
		}
		j, ok := byName[b]
		switch {
		case b == out[i].Name:
			t.errf("backup", "a printer cannot be its own backup; name another printer, or leave backup out")
		case !ok:
			msg := fmt.Sprintf("there is no printer called %q", b)
			if s := suggest(b, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			t.errf("backup", "%s; backup must be the name of another [[printers]] entry", msg)
		default:
			next[i] = j
		}
	}
	// Each printer has at most one backup, so following next from any
	// printer either ends or enters exactly one loop.
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(out))
	for start := range out {
		var path []int
		i := start
		for i >= 0 && state[i] == unseen {
			state[i] = onPath
			path = append(path, i)
			i = next[i]
		}
		if i >= 0 && state[i] == onPath {
			loop := path[slices.Index(path, i):]
			first := slices.Min(loop) // report where the loop starts in the file
			k := slices.Index(loop, first)
			loop = slices.Concat(loop[k:], loop[:k])
			chain := make([]string, 0, len(loop)+1)
			for _, n := range loop {
				chain = append(chain, out[n].Name)
			}
			chain = append(chain, out[first].Name)
			tables[first].errf("backup", "the backups go round in a loop (%s), so tickets could be passed round forever; remove one of these backup settings", strings.Join(chain, " → "))
		}
		for _, n := range path {
			state[n] = done
		}
	}
}

// maxTokenFile bounds what is read of api_token_file: a token is a line,
// and a config naming /dev/zero or a pipe must not hang or fill the agent.
const maxTokenFile = 4 << 10

// readTokenFile reads a token file, which must be a regular file of at most
// maxTokenFile bytes.
func readTokenFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTokenFile {
		return nil, fmt.Errorf("larger than %d bytes: a token file holds one token", maxTokenFile)
	}
	return data, nil
}
