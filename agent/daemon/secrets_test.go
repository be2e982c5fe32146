package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"printgate/agent/config"
)

// TestGuardSecrets is the attack on disk: `printgate token >
// api-token.txt` (the README's own step) leaves a 0644 file, and a data
// dir made earlier at 0755 stayed 0755. At start the data dir is tightened
// to 0700 and the readable token file is warned about with its fix; a
// 0600 file is not.
func TestGuardSecrets(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits say nothing on Windows; the installer's ACLs decide there")
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	tok := filepath.Join(t.TempDir(), "api-token.txt")
	if err := os.WriteFile(tok, []byte("tok-0123456789abcdef01234\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tok, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := &config.Config{DataDir: dir, APITokenFile: tok}
	guardSecrets(cfg, log)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data dir is %04o after start, want 0700", perm)
	}
	out := logs.String()
	for _, want := range []string{"data dir tightened", "was=0755", "API token file can be read by other users", "mode=0644", "chmod 600 " + tok, "printgate token --out"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	logs.Reset()
	if err := os.Chmod(tok, 0o600); err != nil {
		t.Fatal(err)
	}
	guardSecrets(cfg, log)
	if out := logs.String(); out != "" {
		t.Errorf("a 0700 data dir and a 0600 token file still logged:\n%s", out)
	}
}
