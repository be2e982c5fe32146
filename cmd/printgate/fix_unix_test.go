//go:build unix

package main

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// otherAccount makes cmd run as an account that is not the owner of the
// test's files: nobody when the test runs as root; the test's own account
// otherwise, with the files' modes shutting it out. It returns that
// account's user:group.
func otherAccount(t *testing.T, cmd *exec.Cmd) (string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		u, _ := user.Current()
		g, _ := user.LookupGroupId(u.Gid)
		return u.Username, g.Name
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no nobody account to run as")
	}
	g, _ := user.LookupGroupId(u.Gid)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if u.Uid != "65534" {
		t.Skip("nobody is not uid 65534 here")
	}
	return u.Username, g.Name
}

// openTree makes the folders from dir up to the temp root enterable by
// every account, so another account reaches the binary and the config.
func openTree(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		for ; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFixStatusWithoutSudo ensures `status` by an account that cannot read
// the config says so, with whose file it is, and to use sudo (it said
// "permission denied" with no hint).
func TestFixStatusWithoutSudo(t *testing.T) {
	bin := buildPrintgate(t)
	config, dir, _, _ := promiseSetup(t)
	if err := os.Chmod(config, 0o000); err != nil {
		t.Fatal(err)
	}
	openTree(t, filepath.Dir(bin), dir)
	cmd := exec.Command(bin, "status", "--config", config)
	who, _ := otherAccount(t, cmd)
	code, out, _ := runBinary(t, bin, cmd)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantFix(t, "status", out, regexp.QuoteMeta(config+": "+who+" cannot read the config: permission denied (it belongs to "), "run it with sudo: sudo printgate status")
}

// TestFixDataDir ensures `run` with a data dir it cannot create or cannot
// write says so at the data_dir line, with the mkdir and chown that fix
// it (it gave the OS error of the log file or the spool).
func TestFixDataDir(t *testing.T) {
	bin := buildPrintgate(t)
	config, dir, _, _ := promiseSetup(t)
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o555); err != nil {
		t.Fatal(err)
	}
	openTree(t, filepath.Dir(bin), dir)
	for _, tc := range []struct{ data, msg string }{
		{filepath.Join(locked, "data"), "does not exist and cannot be created: permission denied"},
		{locked, "is not writable by %s, the account the agent runs as: permission denied"},
	} {
		body, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		body = regexp.MustCompile(`(?m)^data_dir = .*$`).ReplaceAll(body, []byte(`data_dir = "`+tc.data+`"`))
		if err := os.WriteFile(config, body, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(config, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "--config", config)
		who, group := otherAccount(t, cmd)
		code, _, errs := runBinary(t, bin, cmd)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", tc.data, code)
		}
		msg := strings.ReplaceAll(tc.msg, "%s", who)
		wantFix(t, tc.data, errs, regexp.QuoteMeta("printgate run: "+config+":1: data_dir: "+tc.data+" "+msg),
			"sudo mkdir -p "+tc.data+" && sudo chown "+who+":"+group+" "+tc.data)
	}
}
