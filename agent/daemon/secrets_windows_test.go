package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"printgate/agent/config"
)

// TestWiderReaders is the secrets-on-disk check on Windows: a token file
// whose ACL lets Users read it is named, with the account; one left to its
// owner is not.
func TestWiderReaders(t *testing.T) {
	tok, set, me := aclTokenFile(t)
	set("D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;" + me + ")")
	if got, err := widerReaders(tok); err != nil || len(got) != 0 {
		t.Fatalf("owner-only ACL: readers %v, err %v; want none", got, err)
	}
	set("D:P(A;;FA;;;SY)(A;;FA;;;" + me + ")(A;;FR;;;BU)")
	got, err := widerReaders(tok)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(strings.ToLower(got[0]), "users") {
		t.Fatalf("Users-readable ACL: readers %v; want the Users group", got)
	}
}

// TestGuardSecretsReadsACL holds guardSecrets to its Windows half: the
// ACL check was once written and never called, so a token file every
// account could read went unmentioned on Windows.
func TestGuardSecretsReadsACL(t *testing.T) {
	tok, set, me := aclTokenFile(t)
	set("D:P(A;;FA;;;SY)(A;;FA;;;" + me + ")(A;;FR;;;BU)")
	var buf bytes.Buffer
	cfg := &config.Config{DataDir: t.TempDir(), APITokenFile: tok}
	guardSecrets(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	if !strings.Contains(buf.String(), "API token file") || !strings.Contains(strings.ToLower(buf.String()), "users") {
		t.Fatalf("a Users-readable token file was not warned about:\n%s", buf.String())
	}
}

// aclTokenFile writes a token file and returns it, a setter of its DACL
// from SDDL, and this process's account SID. It skips under Wine.
func aclTokenFile(t *testing.T) (string, func(string), string) {
	t.Helper()
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		t.Skip("Wine keeps no ACL: it derives one from the Unix mode bits (Everyone may read), so the DACL this test sets never comes back")
	}
	tok := filepath.Join(t.TempDir(), "api-token.txt")
	if err := os.WriteFile(tok, []byte("tok-0123456789abcdef01234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	owner, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	set := func(sddl string) {
		t.Helper()
		sd, err := windows.SecurityDescriptorFromString(sddl)
		if err != nil {
			t.Fatal(err)
		}
		dacl, _, err := sd.DACL()
		if err != nil {
			t.Fatal(err)
		}
		if err := windows.SetNamedSecurityInfo(tok, windows.SE_FILE_OBJECT,
			windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
			t.Fatal(err)
		}
	}
	return tok, set, owner.User.Sid.String()
}
