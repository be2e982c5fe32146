package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/apispec"
)

// TestRawPortNodeEscposGetStatuses drives a raw port of the real binary with
// the npm library @node-escpos/core, unmodified (the versions
// testdata/node-escpos/package-lock.json pins, installed into a cache dir).
// Its getStatuses() writes DLE EOT 1, 2, 3 and 4 in one go, a byte a write,
// and takes the first chunk its socket reads as the four answers: fewer than
// 4 bytes and it fails. The port answers a burst of queries in one write
// (PROTOCOL.md §3 Raw port, "Status"), so the library sees the four bytes of
// a healthy printer, then prints a ticket on the same connection. Skips
// without node, except under CI=true, and in -short mode.
func TestRawPortNodeEscposGetStatuses(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: it installs npm packages and runs node")
	}
	pkg, err := filepath.Abs(filepath.Join("testdata", "node-escpos"))
	if err != nil {
		t.Fatal(err)
	}
	mods := apispec.NodeModules(t, pkg)
	node := apispec.RequireNode(t)

	dir := t.TempDir()
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	port, rawPort := freePort(t), freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	config := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\nraw_listen = \"127.0.0.1:%d\"\n",
		dir, port, rawToken, p.Addr(), rawPort)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := realAgent(t, config, base)

	work := t.TempDir()
	script, err := os.ReadFile(filepath.Join(pkg, "statuses.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "statuses.cjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mods, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	// Several runs: how the library's one-byte writes fall into the port's
	// reads varies from run to run.
	const runs = 5
	for i := range runs {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, node, "statuses.cjs", "127.0.0.1", fmt.Sprint(rawPort), fmt.Sprintf("NODE ESCPOS %d", i))
		cmd.Dir = work
		cmd.Env = apispec.NodeEnv()
		out, err := cmd.CombinedOutput()
		cancel()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var got struct {
			Statuses []int  `json:"statuses"`
			Error    string `json:"error"`
		}
		if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &got); jerr != nil || err != nil || got.Error != "" {
			t.Fatalf("run %d: node statuses.cjs: %v %s\n%s\nagent:\n%s", i, err, got.Error, out, logs.String())
		}
		// An idle Epson: DLE EOT 1 0x16 (drawer pin high), 2-4 0x12.
		if want := []int{0x16, 0x12, 0x12, 0x12}; fmt.Sprint(got.Statuses) != fmt.Sprint(want) {
			t.Fatalf("run %d: statuses %x, want %x", i, got.Statuses, want)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tks, err := p.WaitTickets(ctx, runs)
	if err != nil {
		t.Fatalf("the library's tickets did not all print: %v\n%s", err, logs.String())
	}
	for i, tk := range tks {
		if want := fmt.Sprintf("NODE ESCPOS %d", i); !tk.Contains(want) {
			t.Errorf("ticket %d is %q, want %q", i, tk.Text(), want)
		}
	}
}
