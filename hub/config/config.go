// Package config reads the hub's TOML config. Every problem is reported at
// once, each as FILE:LINE and a sentence saying what to change, as the
// agent's config does (agent/config).
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"printgate/internal/suggest"
)

// Defaults of the config; docs/HUB.md documents them.
const (
	DefaultListen      = "127.0.0.1:8640"
	DefaultRetention   = 30 * 24 * time.Hour
	DefaultMaxStoreMB  = 8192
	DefaultExpireAfter = 24 * time.Hour
	minRetention       = time.Hour
	// DefaultMaxJobsPerStore and DefaultMaxJobsPerTenant bound the job
	// records one store, and all a tenant's stores, keep (hub/store's
	// defaults).
	DefaultMaxJobsPerStore  = 200_000
	DefaultMaxJobsPerTenant = 2_000_000
)

// Config is a checked hub config.
type Config struct {
	// Path is the file it was read from.
	Path string
	// DataDir holds the engine's files (required; relative to the file).
	DataDir string
	// Listen is the HTTP listener: agents' websocket, order API, /healthz.
	Listen string
	// Node names this hub node (default: the host name).
	Node string
	// Retention is how long jobs and their task_no dedupe are kept after
	// their last change.
	Retention time.Duration
	// ExpireAfter is how long a job without a timeout waits for an agent's
	// job_ack before it expires (EXPIRED).
	ExpireAfter time.Duration
	// MaxStoreMB bounds the jobs on disk.
	MaxStoreMB int64
	// MaxJobsPerStore and MaxJobsPerTenant bound the job records of one
	// store and of a tenant's stores; past either a submit is refused.
	MaxJobsPerStore, MaxJobsPerTenant int
	// LogLevel is the least severe level logged.
	LogLevel slog.Level
	// TLSCert and TLSKey are PEM files (relative to the config file): with
	// both, the listener serves HTTPS and wss:// only.
	TLSCert, TLSKey string
	// TestAPI mounts the test API of PROTOCOL.md §7 under /api/ (test_api =
	// true): it hands device tokens to whoever asks, so only a staging hub
	// may set it.
	TestAPI bool
	// PairingInterval is the device flow's poll interval (zero: 5 s) and
	// PingInterval the agents' websocket pings (zero: 20 s); not keys of
	// the file, tests set them.
	PairingInterval, PingInterval time.Duration
	// NATSListen opens the engine's client port when set ([nats] listen);
	// empty, only the hub's own process reaches the engine.
	NATSListen string
	// AllowedHosts are the names (and addresses) the fleet page answers
	// for besides loopback names, the listener's address and the TLS
	// certificate's names: the hub's public name behind a proxy.
	AllowedHosts []string
	// Cluster is the [cluster] table; nil (no table) runs one node.
	Cluster *Cluster
}

// Error is one problem of a config file, where the person editing it has
// to look.
type Error struct {
	File string
	Line int
	Msg  string
}

// Error returns "file:line: msg".
func (e Error) Error() string {
	if e.Line <= 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Errors is every problem of one file, in line order.
type Errors []Error

// Error lists the problems one per line.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Load reads and checks the config at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no config at %s: %w; write one with at least data_dir = \"/var/lib/printgate-hub\" (docs/HUB.md lists every key), or name another file with --config", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// keys are the keys of each table ("" the top level).
var keys = map[string][]string{
	"":        {"data_dir", "listen", "node", "retention", "expire_after", "max_store_mb", "max_jobs_per_store", "max_jobs_per_tenant", "log_level", "tls_cert", "tls_key", "test_api", "nats", "allowed_hosts", "cluster"},
	"nats":    {"listen"},
	"cluster": {"name", "listen", "peers", "tls_cert", "tls_key", "tls_ca"},
}

// Parse checks config text that came from path; relative paths in it are
// taken relative to the file's directory.
func Parse(path string, data []byte) (*Config, error) {
	src := string(data)
	var raw map[string]any
	if _, err := toml.Decode(src, &raw); err != nil {
		var pe toml.ParseError
		line := 1
		msg := err.Error()
		if errors.As(err, &pe) {
			line, msg = max(pe.Position.Line, 1), pe.Message
		}
		return nil, Errors{{File: path, Line: line, Msg: "this is not valid TOML: " + msg}}
	}
	p := &parser{file: path, lines: scanLines(src)}
	cfg := &Config{Path: path, Listen: DefaultListen, Retention: DefaultRetention, ExpireAfter: DefaultExpireAfter,
		MaxStoreMB: DefaultMaxStoreMB, MaxJobsPerStore: DefaultMaxJobsPerStore, MaxJobsPerTenant: DefaultMaxJobsPerTenant, LogLevel: slog.LevelInfo}
	p.unknown("", raw)
	if v, ok := p.str("", raw, "data_dir"); ok {
		if v == "" {
			p.add("data_dir", "data_dir is empty; set it to the directory the hub keeps its data in, e.g. \"/var/lib/printgate-hub\"")
		} else if filepath.IsAbs(v) {
			cfg.DataDir = filepath.Clean(v)
		} else {
			cfg.DataDir = filepath.Join(filepath.Dir(path), v)
		}
	} else if _, wrote := raw["data_dir"]; !wrote {
		p.errs = append(p.errs, Error{File: path, Line: 1, Msg: "data_dir is missing; add data_dir = \"/var/lib/printgate-hub\" (the directory the hub keeps its data in)"})
	}
	if v, ok := p.str("", raw, "listen"); ok {
		if _, _, err := net.SplitHostPort(v); err != nil {
			p.add("listen", fmt.Sprintf("listen %q is not host:port; write e.g. \"127.0.0.1:8640\" or \":8640\"", v))
		} else {
			cfg.Listen = v
		}
	}
	if v, ok := p.str("", raw, "node"); ok {
		cfg.Node = v
	}
	if v, ok := p.str("", raw, "retention"); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < minRetention {
			p.add("retention", fmt.Sprintf("retention %q must be a duration of at least 1h, e.g. \"720h\" (30 days)", v))
		} else {
			cfg.Retention = d
		}
	}
	if v, ok := p.str("", raw, "expire_after"); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > cfg.Retention {
			p.add("expire_after", fmt.Sprintf("expire_after %q must be a duration from 1m up to retention, e.g. \"24h\"", v))
		} else {
			cfg.ExpireAfter = d
		}
	}
	if v, ok := raw["max_store_mb"]; ok {
		n, isInt := v.(int64)
		if !isInt || n < 64 {
			p.add("max_store_mb", fmt.Sprintf("max_store_mb must be a whole number of MiB, at least 64, not %v", v))
		} else {
			cfg.MaxStoreMB = n
		}
	}
	for _, k := range []struct {
		key string
		to  *int
	}{{"max_jobs_per_store", &cfg.MaxJobsPerStore}, {"max_jobs_per_tenant", &cfg.MaxJobsPerTenant}} {
		if v, ok := raw[k.key]; ok {
			n, isInt := v.(int64)
			if !isInt || n < 1 || n > 1<<40 {
				p.add(k.key, fmt.Sprintf("%s must be a whole number of jobs, at least 1, not %v", k.key, v))
			} else {
				*k.to = int(n)
			}
		}
	}
	if cfg.MaxJobsPerStore > cfg.MaxJobsPerTenant {
		// Said at whichever of the two the file sets (the tenant's if both).
		at := "max_jobs_per_store"
		if _, ok := raw["max_jobs_per_tenant"]; ok {
			at = "max_jobs_per_tenant"
		}
		p.add(at, fmt.Sprintf("max_jobs_per_store (%d) is above max_jobs_per_tenant (%d); a store's jobs count towards its tenant's: keep max_jobs_per_tenant at least max_jobs_per_store", cfg.MaxJobsPerStore, cfg.MaxJobsPerTenant))
	}
	if v, ok := p.str("", raw, "log_level"); ok {
		if err := cfg.LogLevel.UnmarshalText([]byte(v)); err != nil {
			p.add("log_level", fmt.Sprintf("log_level %q is not one of debug, info, warn, error", v))
		}
	}
	for _, k := range []string{"tls_cert", "tls_key"} {
		if v, ok := p.str("", raw, k); ok {
			if v == "" {
				p.add(k, k+" is empty; name a PEM file, or leave both tls_cert and tls_key out to serve plain HTTP")
				continue
			}
			if !filepath.IsAbs(v) {
				v = filepath.Join(filepath.Dir(path), v)
			}
			if k == "tls_cert" {
				cfg.TLSCert = v
			} else {
				cfg.TLSKey = v
			}
		}
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		set := "tls_cert"
		if cfg.TLSCert == "" {
			set = "tls_key"
		}
		p.add(set, "tls_cert and tls_key go together: set both (the certificate chain and its private key, PEM) or neither")
	}
	if v, ok := raw["test_api"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			p.add("test_api", fmt.Sprintf("test_api must be true or false (no quotes), not %v", v))
		} else {
			cfg.TestAPI = b
		}
	}
	if v, ok := raw["nats"]; ok {
		t, isTable := v.(map[string]any)
		if !isTable {
			p.add("nats", "nats must be a table: [nats] with listen = \"127.0.0.1:4222\"")
		} else {
			p.unknown("nats", t)
			if l, ok := p.str("nats", t, "listen"); ok && l != "" {
				if _, _, err := net.SplitHostPort(l); err != nil {
					p.add("nats.listen", fmt.Sprintf("listen %q in [nats] is not host:port; write e.g. \"127.0.0.1:4222\", or leave it out to keep the engine in the hub's process", l))
				} else {
					cfg.NATSListen = l
				}
			}
		}
	}
	if v, ok := raw["allowed_hosts"]; ok {
		list, isList := v.([]any)
		for _, x := range list {
			h, isStr := x.(string)
			if !isStr || strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/ ") {
				isList = false
				break
			}
			cfg.AllowedHosts = append(cfg.AllowedHosts, h)
		}
		if !isList {
			p.add("allowed_hosts", "allowed_hosts must be a list of host names in quotes, e.g. [\"hub.example.com\"] (no scheme, no path)")
		}
	}
	p.parseCluster(path, raw, cfg)
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
		return nil, p.errs
	}
	return cfg, nil
}

// parser collects the problems of one file.
type parser struct {
	file  string
	lines map[string]int // "table.key" or "key" -> line
	errs  Errors
}

// add reports a problem at the line of key ("table.key" for a key in a
// table).
func (p *parser) add(key, msg string) {
	p.errs = append(p.errs, Error{File: p.file, Line: p.lines[key], Msg: msg})
}

// str reads a string key of table m.
func (p *parser) str(table string, m map[string]any, key string) (string, bool) {
	v, ok := m[key]
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		full := joinKey(table, key)
		p.add(full, fmt.Sprintf("%s must be a string in quotes, not %v", full, v))
		return "", false
	}
	return s, true
}

// unknown reports every key of table m the config does not have, with the
// closest known key when one is near.
func (p *parser) unknown(table string, m map[string]any) {
	known := keys[table]
	var names []string
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if slices.Contains(known, k) {
			continue
		}
		msg := fmt.Sprintf("unknown key %s", joinKey(table, k))
		if s := suggest.Closest(k, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		p.add(joinKey(table, k), msg+"; the keys are "+strings.Join(known, ", "))
	}
}

func joinKey(table, key string) string {
	if table == "" {
		return key
	}
	return table + "." + key
}

var (
	headerRe = regexp.MustCompile(`^\s*\[\s*([A-Za-z0-9_-]+)\s*\]`)
	keyRe    = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)\s*=`)
)

// scanLines finds the line of each key and table header of a config this
// simple (top-level keys and one-level tables).
func scanLines(src string) map[string]int {
	out := map[string]int{}
	table := ""
	for i, line := range strings.Split(src, "\n") {
		if m := headerRe.FindStringSubmatch(line); m != nil {
			table = m[1]
			if _, seen := out[table]; !seen {
				out[table] = i + 1
			}
			continue
		}
		if m := keyRe.FindStringSubmatch(line); m != nil {
			k := joinKey(table, m[1])
			if _, seen := out[k]; !seen {
				out[k] = i + 1
			}
		}
	}
	return out
}
