package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"printgate/internal/fileowner"
)

// agentIDFile holds the agent's identity in the data dir: made once, kept
// across restarts and upgrades, so the cloud knows the same store PC.
const agentIDFile = "agent-id"

// LoadOrCreateAgentID returns this installation's agent id, creating and
// saving a random one ("pg-" and 16 hex digits) on first use.
func LoadOrCreateAgentID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, agentIDFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read agent id %s: %w", path, err)
	}
	raw := make([]byte, 8)
	rand.Read(raw)
	id := "pg-" + hex.EncodeToString(raw)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write agent id %s: %w", tmp, err)
	}
	// An agent run by root keeps the data dir's files its owner's.
	if err := fileowner.Like(tmp, dataDir); err != nil {
		return "", fmt.Errorf("write agent id %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("save agent id %s: %w", path, err)
	}
	return id, nil
}
