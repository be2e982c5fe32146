package apispec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NodeEnv is the environment npm and the tools it installs run with: no
// update checks and no telemetry, so a test talks only to the npm registry
// (when installing) and to loopback.
func NodeEnv() []string {
	return append(os.Environ(),
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
		"REDOCLY_TELEMETRY=off",
		"REDOCLY_SUPPRESS_UPDATE_NOTICE=true",
		"NO_UPDATE_NOTIFIER=1",
	)
}

// RequireNode returns the path of node, skipping t when node or npm is
// missing, except under CI=true, where it fails: .ci/run installs them.
func RequireNode(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npm")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are needed (.ci/run installs them with apt-get): %v", err)
		}
		t.Skipf("skipped: node and npm are not installed (apt-get install nodejs npm): %v", err)
	}
	return node
}

// NodeModules installs the npm packages that dir's package-lock.json pins
// into a cache directory, once per lock file content, and returns that
// node_modules. Nothing is written into dir. It calls RequireNode first.
func NodeModules(t testing.TB, dir string) string {
	t.Helper()
	RequireNode(t)
	pkg, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatalf("%v: pin the packages with npm install --package-lock-only", err)
	}
	sum := sha256.Sum256(append(append(pkg, 0), lock...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	base = filepath.Join(base, "printgate-npm")
	final := filepath.Join(base, filepath.Base(dir)+"-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(final, "node_modules")); err == nil {
		return filepath.Join(final, "node_modules")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// Install beside the final place and rename, so a test that runs at
	// the same time (or one killed mid-install) never sees half of it.
	tmp, err := os.MkdirTemp(base, "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = NodeEnv()
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci for %s: %v\n%s", dir, err, out)
	}
	t.Logf("npm ci for %s: %s", filepath.Base(dir), time.Since(start).Round(time.Millisecond))
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, "node_modules")); serr != nil {
			t.Fatal(errors.Join(err, serr))
		}
	}
	return filepath.Join(final, "node_modules")
}

// Bin is the path of an installed package's command in nodeModules.
func Bin(nodeModules, name string) string {
	return filepath.Join(nodeModules, ".bin", strings.TrimSpace(name))
}
