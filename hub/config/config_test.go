package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/hub/store"
)

// TestParseReportsEveryProblemAtItsLine ensures a config with several
// mistakes is refused with each one as FILE:LINE, in line order, with the
// closest key for a typo.
func TestParseReportsEveryProblemAtItsLine(t *testing.T) {
	src := "listen = \"nope\"\nretension = \"1h\"\n\n[nats]\nlisten = \"x\"\n"
	_, err := Parse("hub.toml", []byte(src))
	if err == nil {
		t.Fatal("a bad config was taken")
	}
	want := []string{
		"hub.toml:1: data_dir is missing",
		"hub.toml:1: listen \"nope\" is not host:port",
		"hub.toml:2: unknown key retension (did you mean retention?)",
		"hub.toml:5: listen \"x\" in [nats] is not host:port",
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: %q, want it to start %q", i+1, lines[i], w)
		}
	}
}

// TestParseDefaults ensures a config with only data_dir gets the
// documented defaults, the data dir taken relative to the file.
func TestParseDefaults(t *testing.T) {
	cfg, err := Parse(filepath.Join("etc", "hub.toml"), []byte("data_dir = \"data\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != filepath.Join("etc", "data") || cfg.Listen != DefaultListen || cfg.Retention != 30*24*time.Hour ||
		cfg.MaxStoreMB != DefaultMaxStoreMB || cfg.NATSListen != "" {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// TestParseSyntaxError ensures a file that is not TOML names its line.
func TestParseSyntaxError(t *testing.T) {
	_, err := Parse("hub.toml", []byte("data_dir = \"a\"\nlisten = \"x\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "hub.toml:2: this is not valid TOML") {
		t.Fatalf("got %v", err)
	}
}

// TestParseTLSPair ensures tls_cert without tls_key is refused at its line
// and both are taken relative to the file.
func TestParseTLSPair(t *testing.T) {
	_, err := Parse("hub.toml", []byte("data_dir = \"d\"\ntls_cert = \"hub.crt\"\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "hub.toml:2: tls_cert and tls_key go together") {
		t.Fatalf("got %v", err)
	}
	cfg, err := Parse(filepath.Join("etc", "hub.toml"), []byte("data_dir = \"d\"\ntls_cert = \"hub.crt\"\ntls_key = \"/k/hub.key\"\n"))
	if err != nil || cfg.TLSCert != filepath.Join("etc", "hub.crt") || cfg.TLSKey != "/k/hub.key" {
		t.Fatalf("%+v, %v", cfg, err)
	}
}

// TestParseJobQuotas ensures max_jobs_per_store and max_jobs_per_tenant
// default to hub/store's bounds, take whole numbers of at least 1, and
// refuse a store bound above the tenant's, at the line that set it.
func TestParseJobQuotas(t *testing.T) {
	if DefaultMaxJobsPerStore != store.DefaultMaxJobsPerStore || DefaultMaxJobsPerTenant != store.DefaultMaxJobsPerTenant {
		t.Fatalf("the config's defaults %d/%d are not hub/store's %d/%d", DefaultMaxJobsPerStore, DefaultMaxJobsPerTenant, store.DefaultMaxJobsPerStore, store.DefaultMaxJobsPerTenant)
	}
	cfg, err := Parse("hub.toml", []byte("data_dir = \"d\"\n"))
	if err != nil || cfg.MaxJobsPerStore != DefaultMaxJobsPerStore || cfg.MaxJobsPerTenant != DefaultMaxJobsPerTenant {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	if d := Default(); d.MaxJobsPerStore != DefaultMaxJobsPerStore || d.MaxJobsPerTenant != DefaultMaxJobsPerTenant {
		t.Fatalf("built-in config: %+v", d)
	}
	cfg, err = Parse("hub.toml", []byte("data_dir = \"d\"\nmax_jobs_per_store = 500\nmax_jobs_per_tenant = 9000\n"))
	if err != nil || cfg.MaxJobsPerStore != 500 || cfg.MaxJobsPerTenant != 9000 {
		t.Fatalf("%+v, %v", cfg, err)
	}
	for src, want := range map[string]string{
		"data_dir = \"d\"\nmax_jobs_per_store = 0\n":         "hub.toml:2: max_jobs_per_store must be a whole number of jobs, at least 1",
		"data_dir = \"d\"\nmax_jobs_per_tenant = \"lots\"\n": "hub.toml:2: max_jobs_per_tenant must be a whole number of jobs, at least 1",
		"data_dir = \"d\"\nmax_jobs_per_tenant = 10\n":       "hub.toml:2: max_jobs_per_store (200000) is above max_jobs_per_tenant (10)",
	} {
		if _, err := Parse("hub.toml", []byte(src)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v; want %q", src, err, want)
		}
	}
}
