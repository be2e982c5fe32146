//go:build unix

package doctor

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"printgate/agent/web"
)

// TestDoctorServiceFiles ensures doctor fails, with the chown that fixes
// it, a file in the data dir that the service's account cannot read
// (`sudo printgate pin set` once wrote the PIN as root, mode
// 0600; every login failed while doctor said all checks passed), and
// passes once the file is the account's.
func TestDoctorServiceFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the bug is root writing a file the service cannot read")
	}
	svc, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no nobody account to stand for the service's")
	}
	env := testDoctorEnv()
	env.ServiceUser = svc.Username
	data := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := doctorConfig(t, data, ":8631", "")
	acc := func(path string) {
		t.Helper()
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	acc(data)
	acc(cfg.Path)
	rs := CheckServiceFiles(env, cfg)
	wantResult(t, "nothing written yet", rs[0], Pass, "can read the 2 file(s) it needs", "")

	// What sudo printgate pin set once wrote: root's, 0600.
	pin := web.PINPath(data)
	if err := os.WriteFile(pin, []byte("hash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs = CheckServiceFiles(env, cfg)
	if len(rs) != 1 {
		t.Fatalf("results %+v", rs)
	}
	wantResult(t, "root's PIN", rs[0], Fail, pin+": "+svc.Username+" (the service's account) cannot read the manager PIN: it belongs to root:", "sudo chown "+svc.Username+":")
	if !strings.HasSuffix(rs[0].Fix, " "+pin) {
		t.Errorf("fix %q does not end with the file", rs[0].Fix)
	}
	acc(pin)
	rs = CheckServiceFiles(env, cfg)
	wantResult(t, "the service's PIN", rs[0], Pass, "can read the 3 file(s)", "")
}
