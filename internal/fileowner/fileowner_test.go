//go:build unix

package fileowner

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLike ensures a file root writes into a folder that belongs to another
// account is handed to that account, and that a file in root's own folder
// stays root's (the PIN file `sudo printgate pin set` once wrote was
// root's, and the service could not read it).
func TestLike(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can give a file away")
	}
	const uid, gid = 65534, 65534
	dir := t.TempDir()
	svc := filepath.Join(dir, "data")
	if err := os.Mkdir(svc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(svc, uid, gid); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		folder   string
		uid, gid uint32
	}{{svc, uid, gid}, {dir, 0, 0}} {
		f := filepath.Join(tc.folder, "manager-pin")
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Like(f, tc.folder); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != tc.uid || st.Gid != tc.gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", f, st.Uid, st.Gid, tc.uid, tc.gid)
		}
	}
}

// TestChownFix ensures the fix names the account and the file as a person
// types them.
func TestChownFix(t *testing.T) {
	got := ChownFix("/var/lib/printgate/manager-pin", Account{User: "printgate", Group: "printgate"})
	if want := "sudo chown printgate:printgate /var/lib/printgate/manager-pin"; got != want {
		t.Errorf("ChownFix = %q, want %q", got, want)
	}
}
