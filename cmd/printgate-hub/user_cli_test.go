package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"printgate/hub"
	"printgate/hub/config"
)

// TestUserCommands: `user add` makes a password and prints it once on
// stdout (its words on stderr), or takes one from stdin with
// --password-stdin and prints none; either password then signs the user
// in. `user list` shows the tenant's users only, `user remove` removes
// one. Every failure (a short password, a taken name, an unknown tenant,
// an unknown user, a missing flag) exits 1 or 2 with a last line fix:.
func TestUserCommands(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(cfgPath, []byte("data_dir = \"data\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		var code int
		if stdin != "" {
			// dispatch reads os.Stdin; a test gives the password itself.
			code = userCmd(args[1], args[2:], strings.NewReader(stdin), &out, &errb)
		} else {
			code = dispatch(args, &out, &errb)
		}
		return code, out.String(), errb.String()
	}
	fixLast := func(what, stderr string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if !strings.HasPrefix(lines[len(lines)-1], "fix: ") {
			t.Errorf("%s: the last line of stderr is not a fix:\n%s", what, stderr)
		}
	}
	c := []string{"--config", cfgPath}
	for _, tn := range []string{"acme", "other"} {
		if code, _, e := run("", append([]string{"tenant", "add", "--id", tn}, c...)...); code != 0 {
			t.Fatalf("tenant add: %d %s", code, e)
		}
	}
	code, out, e := run("", append([]string{"user", "add", "--tenant", "acme", "--name", "ana"}, c...)...)
	made := strings.TrimSpace(out)
	if code != 0 || len(made) != 20 || strings.Count(out, "\n") != 1 || !strings.Contains(e, "shown once above") {
		t.Fatalf("user add: exit %d, stdout %q, stderr %q; want a 20-character password on one line", code, out, e)
	}
	code, out, e = run("a given password\n", append([]string{"user", "add", "--tenant", "acme", "--name", "bob", "--password-stdin"}, c...)...)
	if code != 0 || out != "" {
		t.Fatalf("user add --password-stdin: exit %d, stdout %q, stderr %q; want no password printed", code, out, e)
	}
	for _, bad := range []struct {
		stdin string
		args  []string
		code  int
	}{
		{"short\n", []string{"user", "add", "--tenant", "acme", "--name", "cy", "--password-stdin"}, 2},
		{"", []string{"user", "add", "--tenant", "acme", "--name", "ana"}, 1},
		{"", []string{"user", "add", "--tenant", "nobody", "--name", "ana"}, 1},
		{"", []string{"user", "add", "--tenant", "acme", "--name", "Ana!"}, 2},
		{"", []string{"user", "add", "--tenant", "acme"}, 2},
		{"", []string{"user", "remove", "--tenant", "other", "--name", "ana"}, 1},
		{"", []string{"user", "list", "--tenant", "nobody"}, 1},
	} {
		code, _, e := run(bad.stdin, append(bad.args, c...)...)
		if code != bad.code {
			t.Errorf("%v: exit %d, want %d\n%s", bad.args, code, bad.code, e)
		}
		fixLast(strings.Join(bad.args, " "), e)
	}
	if code, out, _ := run("", append([]string{"user", "list", "--tenant", "acme"}, c...)...); code != 0 || !strings.HasPrefix(out, "ana  ") || !strings.Contains(out, "\nbob  ") || strings.Count(out, "\n") != 2 {
		t.Errorf("user list acme: %d %q", code, out)
	}
	if code, out, _ := run("", append([]string{"user", "list", "--tenant", "other"}, c...)...); code != 0 || !strings.Contains(out, "no users") {
		t.Errorf("user list other: %d %q", code, out)
	}
	if code, _, e := run("", append([]string{"user", "remove", "--tenant", "acme", "--name", "bob"}, c...)...); code != 0 {
		t.Fatalf("user remove: %d %s", code, e)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := hub.OpenStore(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CheckUser(context.Background(), "acme", "ana", made); err != nil {
		t.Errorf("the made password does not sign ana in: %v", err)
	}
	if _, err := st.CheckUser(context.Background(), "acme", "bob", "a given password"); err == nil {
		t.Error("removed bob still signs in")
	}
}
