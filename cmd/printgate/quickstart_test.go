package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// TestProtocolCurlQuickstart runs the curl quickstart of PROTOCOL §3 as a
// POS integrator would paste it, with curl (not our client), against the
// real binary and an emulated printer named kitchen: a quickstart that
// stops working when the API changes fails here instead of in the field.
// Only the token's location and the port are swapped for the test's own.
func TestProtocolCurlQuickstart(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the quickstart is a POSIX shell script")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is needed for the PROTOCOL quickstart test (apt-get install curl)")
		}
		t.Skip("no curl on PATH")
	}
	raw, err := os.ReadFile("../../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "### Quickstart with curl")
	if i < 0 {
		t.Fatal("PROTOCOL.md has no \"Quickstart with curl\" section")
	}
	start := strings.Index(doc[i:], "```sh\n")
	if start < 0 {
		t.Fatal("the quickstart has no sh block")
	}
	script := doc[i+start+len("```sh\n"):]
	script = script[:strings.Index(script, "```")]
	const tokenFileDeb = "/etc/printgate/api-token.txt"
	if !strings.Contains(script, "TOKEN=$(") || !strings.Contains(script, tokenFileDeb) || !strings.Contains(script, "127.0.0.1:8631") {
		t.Fatalf("the quickstart no longer reads the token from the .deb's file %s or calls 127.0.0.1:8631; update this test with it:\n%s", tokenFileDeb, script)
	}

	dir := t.TempDir()
	p := printertest.New(printertest.Options{Name: "kitchen", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	port := freePort(t)
	tokenFile := filepath.Join(dir, "api-token.txt")
	if err := os.WriteFile(tokenFile, []byte(promiseToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token_file = %q\n[[printers]]\nname = \"kitchen\"\nurl = \"tcp://%s\"\n", dir, port, tokenFile, p.Addr())
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	realAgent(t, config, base)

	script = strings.ReplaceAll(script, tokenFileDeb, tokenFile)
	script = strings.ReplaceAll(script, "127.0.0.1:8631", fmt.Sprintf("127.0.0.1:%d", port))
	// The token file is readable by whoever runs the script, as the .deb's
	// is by root; the script runs with only cat and curl on its PATH, as in
	// a root shell of a PC without sudo: the quickstart once read the token
	// with sudo alone and sent an empty one there.
	bin := t.TempDir()
	for _, tool := range []string{"cat", "curl"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH")
	}
	run := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bash, "-euc", script)
		cmd.Env = append(os.Environ(), "PATH="+bin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the quickstart failed: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run()
	for _, want := range []string{`"name":"kitchen"`, `"state":"ACCEPTED"`, `"duplicate":false`, `"task_no":"ORD1-0001_KITCHEN_v1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the quickstart's output lacks %s:\n%s", want, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tickets, err := p.WaitTickets(ctx, 1)
	if err != nil {
		t.Fatalf("the quickstart's ticket did not print: %v", err)
	}
	if got := strings.Join(tickets[0].Lines, "\n"); !strings.Contains(got, "Fried rice") {
		t.Errorf("printed ticket lacks the quickstart's text:\n%s", got)
	}
	// The quickstart promises that pasting it again prints nothing.
	if again := run(); !strings.Contains(again, `"duplicate":true`) {
		t.Errorf("the quickstart's POST sent again is not a duplicate:\n%s", again)
	}
	// A later ticket behind it shows the resend queued nothing: the lane
	// prints in order, so a second "Fried rice" would come out first.
	if code := submit(base, promiseToken, "AFTER-0002_KITCHEN_v1", "kitchen"); code != 202 {
		t.Fatalf("follow-up submit answered %d", code)
	}
	tickets, err = p.WaitTickets(ctx, 2)
	if err != nil {
		t.Fatalf("the follow-up ticket did not print: %v", err)
	}
	if got := strings.Join(tickets[1].Lines, "\n"); strings.Contains(got, "Fried rice") {
		t.Errorf("the quickstart's ticket printed twice:\n%s", got)
	}
}
