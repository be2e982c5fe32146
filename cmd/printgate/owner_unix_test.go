//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"printgate/agent"
	"printgate/agent/web"
	"printgate/sync/pair"
)

// svcUID and svcGID stand for the service's account (printgate on a
// store PC): an account that is not root.
const svcUID, svcGID = 65534, 65534

// ownedBy fails the test unless path belongs to uid:gid.
func ownedBy(t *testing.T, path string, uid, gid uint32) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
		t.Errorf("%s belongs to %d:%d, want %d:%d (the data dir's owner)", filepath.Base(path), st.Uid, st.Gid, uid, gid)
	}
}

// TestRootWritesForTheService ensures every file a command run with sudo
// writes into the data dir belongs to the data dir's owner, so the service
// can read it (`sudo printgate pin set` once wrote the PIN as
// root, mode 0600, and every login failed): the manager PIN, the device
// token, the agent id (sudo printgate run), and an API token replaced with
// --out.
func TestRootWritesForTheService(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the bug is root writing a file the service cannot read")
	}
	cfg, data := pinConfig(t, "")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, svcUID, svcGID); err != nil {
		t.Fatal(err)
	}
	env := pinEnv{stdin: strings.NewReader("246810\n")}
	if code, _, errs := runPinCmd(env, "set", "--config", cfg, "--pin-stdin"); code != 0 {
		t.Fatalf("pin set: exit %d: %s", code, errs)
	}
	ownedBy(t, web.PINPath(data), svcUID, svcGID)

	if err := pair.Save(data, "device-token-0123456789"); err != nil {
		t.Fatal(err)
	}
	ownedBy(t, pair.TokenPath(data), svcUID, svcGID)

	if _, err := agent.LoadOrCreateAgentID(data); err != nil {
		t.Fatal(err)
	}
	ownedBy(t, filepath.Join(data, "agent-id"), svcUID, svcGID)

	tok := filepath.Join(data, "api-token.txt")
	if err := writeSecretFile(tok, "old\n"); err != nil {
		t.Fatal(err)
	}
	ownedBy(t, tok, svcUID, svcGID)
	// A token replaced in root's folder keeps the owner the old one had.
	etc := t.TempDir()
	tok = filepath.Join(etc, "api-token.txt")
	if err := os.WriteFile(tok, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tok, svcUID, svcGID); err != nil {
		t.Fatal(err)
	}
	if err := writeSecretFile(tok, "new\n"); err != nil {
		t.Fatal(err)
	}
	ownedBy(t, tok, svcUID, svcGID)
}
