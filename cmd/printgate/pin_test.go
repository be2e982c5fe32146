package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"printgate/agent/web"
)

// pinConfig writes a minimal config whose data dir is a fresh temp dir and
// returns the config path and the data dir.
func pinConfig(t *testing.T, extra string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	path := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"0.0.0.0:8632\"\napi_token = \"pin-test-token-0123456789abc\"\n%s[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n", data, extra)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// terminalAnswers is a pinEnv on a terminal where the user types answers
// in turn; it fails the test if asked more often.
func terminalAnswers(t *testing.T, answers ...string) (pinEnv, *int) {
	asked := 0
	return pinEnv{terminal: true, readSecret: func(prompt string) (string, error) {
		if asked >= len(answers) {
			t.Errorf("asked %q once too often", prompt)
			return "", errors.New("no more input")
		}
		asked++
		return answers[asked-1], nil
	}}, &asked
}

func runPinCmd(env pinEnv, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := pinCmd(env, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestPinSetTerminal ensures `pin set` asks twice on a terminal and stores
// a hash that verifies the PIN (and nothing else), never the PIN itself,
// and says where it went and which page asks for it.
func TestPinSetTerminal(t *testing.T) {
	cfg, data := pinConfig(t, "")
	env, asked := terminalAnswers(t, "246810", "246810")
	code, out, errs := runPinCmd(env, "set", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if *asked != 2 {
		t.Errorf("asked %d times, want 2", *asked)
	}
	hash, err := web.LoadPIN(data)
	if err != nil {
		t.Fatal(err)
	}
	if !web.VerifyPIN(hash, "246810") || web.VerifyPIN(hash, "246811") {
		t.Errorf("stored hash %q does not verify exactly the PIN", hash)
	}
	raw, _ := os.ReadFile(web.PINPath(data))
	if strings.Contains(string(raw), "246810") || strings.Contains(out+errs, "246810") {
		t.Errorf("the PIN itself is stored or shown")
	}
	if !strings.Contains(out, web.PINPath(data)) || !strings.Contains(out, "http://127.0.0.1:8632/") {
		t.Errorf("output does not say where the PIN is and which page asks for it:\n%s", out)
	}

	// Setting it again replaces it.
	env, _ = terminalAnswers(t, "new-pin-13579", "new-pin-13579")
	if code, _, errs := runPinCmd(env, "set", "--config", cfg); code != 0 {
		t.Fatalf("second set: exit %d: %s", code, errs)
	}
	hash, _ = web.LoadPIN(data)
	if !web.VerifyPIN(hash, "new-pin-13579") || web.VerifyPIN(hash, "246810") {
		t.Errorf("the second PIN did not replace the first")
	}
}

// TestPinSetRefused ensures two entries that differ, and a PIN that
// CheckPINFormat refuses, leave no PIN and exit 1 with the reason; a short
// PIN is refused before the second question.
func TestPinSetRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string
		want    string
	}{
		{"mismatch", []string{"246810", "246801"}, "differ"},
		{"short", []string{"12345"}, "at least 6"},
		{"spaces", []string{" 246810"}, "space"},
		{"long", []string{strings.Repeat("9", 65)}, "at most 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, data := pinConfig(t, "")
			env, asked := terminalAnswers(t, tc.answers...)
			code, _, errs := runPinCmd(env, "set", "--config", cfg)
			if code != 1 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "nothing was changed") {
				t.Errorf("exit %d, stderr %q: want 1 and %q", code, errs, tc.want)
			}
			if *asked != len(tc.answers) {
				t.Errorf("asked %d times, want %d", *asked, len(tc.answers))
			}
			if _, err := web.LoadPIN(data); !errors.Is(err, web.ErrNoPIN) {
				t.Errorf("a PIN was stored: %v", err)
			}
		})
	}
}

// TestPinSetStdin ensures --pin-stdin reads one line (with or without its
// newline, CRLF too) and checks it like a typed one; without a terminal
// and without the flag the command refuses instead of hanging.
func TestPinSetStdin(t *testing.T) {
	for _, in := range []string{"135790\n", "135790", "135790\r\nignored\n"} {
		cfg, data := pinConfig(t, "")
		code, _, errs := runPinCmd(pinEnv{stdin: strings.NewReader(in)}, "set", "--config", cfg, "--pin-stdin")
		if code != 0 {
			t.Fatalf("%q: exit %d %s", in, code, errs)
		}
		hash, err := web.LoadPIN(data)
		if err != nil || !web.VerifyPIN(hash, "135790") {
			t.Errorf("%q: stored PIN does not verify: %v", in, err)
		}
	}
	for _, in := range []string{"", "\n", "1234\n"} {
		cfg, data := pinConfig(t, "")
		code, _, errs := runPinCmd(pinEnv{stdin: strings.NewReader(in)}, "set", "--config", cfg, "--pin-stdin")
		if code != 1 || errs == "" {
			t.Errorf("stdin %q: exit %d %q, want 1 with a reason", in, code, errs)
		}
		if _, err := web.LoadPIN(data); !errors.Is(err, web.ErrNoPIN) {
			t.Errorf("stdin %q: a PIN was stored", in)
		}
	}
	cfg, _ := pinConfig(t, "")
	code, _, errs := runPinCmd(pinEnv{stdin: strings.NewReader("135790\n")}, "set", "--config", cfg)
	if code != 2 || !strings.Contains(errs, "--pin-stdin") {
		t.Errorf("no terminal, no --pin-stdin: exit %d %q, want 2 suggesting --pin-stdin", code, errs)
	}
}

// TestPinUsage ensures `pin` alone and unknown subcommands print the usage
// with exit 2, --help with exit 0, and the page URL follows TLS.
func TestPinUsage(t *testing.T) {
	code, _, errs := runPinCmd(pinEnv{})
	if code != 2 || !strings.Contains(errs, "usage: printgate pin set") {
		t.Errorf("pin alone: exit %d %q", code, errs)
	}
	if code, _, errs := runPinCmd(pinEnv{}, "reset"); code != 2 || !strings.Contains(errs, `unknown subcommand "reset"`) {
		t.Errorf("pin reset: exit %d %q", code, errs)
	}
	if code, out, _ := runPinCmd(pinEnv{}, "--help"); code != 0 || !strings.Contains(out, "usage: printgate pin set") {
		t.Errorf("pin --help: exit %d %q", code, out)
	}
	if code, _, _ := runPinCmd(pinEnv{}, "set", "extra"); code != 2 {
		t.Errorf("pin set extra: exit %d, want 2", code)
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"pin"}, &out, &errb); code != 2 {
		t.Errorf("dispatch pin: exit %d", code)
	}

	cfg, _ := pinConfig(t, "tls = \"self-signed\"\n")
	code, stdout, errs := runPinCmd(pinEnv{stdin: strings.NewReader("135790\n")}, "set", "--config", cfg, "--pin-stdin")
	if code != 0 || !strings.Contains(stdout, "https://127.0.0.1:8632/") {
		t.Errorf("with TLS: exit %d %q %q, want the https page", code, stdout, errs)
	}
}
