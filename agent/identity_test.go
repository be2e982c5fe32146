package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentIDIsStable ensures the agent id is made once and then the same
// across restarts, so the cloud recognises the store PC.
func TestAgentIDIsStable(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreateAgentID(dir)
	if err != nil || !strings.HasPrefix(first, "pg-") || len(first) != 19 {
		t.Fatalf("first id %q %v", first, err)
	}
	again, err := LoadOrCreateAgentID(dir)
	if err != nil || again != first {
		t.Errorf("second call %q %v, want %q", again, err, first)
	}
	if other, _ := LoadOrCreateAgentID(t.TempDir()); other == first {
		t.Error("two installations got the same id")
	}
	if fi, err := os.Stat(filepath.Join(dir, agentIDFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("id file: %v %v", fi, err)
	}
}
