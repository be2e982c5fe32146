package main

import (
	"bytes"
	"strings"
	"testing"

	"printgate/agent/config"
)

// TestTokenCommand ensures `printgate token` prints a fresh token long
// enough for the config, a different one each time, and nothing else.
func TestTokenCommand(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		var out, errb bytes.Buffer
		if code := dispatch([]string{"token"}, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		tok := strings.TrimSuffix(out.String(), "\n")
		if len(tok) < config.MinTokenLength || strings.ContainsAny(tok, " \n=") || seen[tok] {
			t.Errorf("token %q: want a fresh one of at least %d characters", tok, config.MinTokenLength)
		}
		seen[tok] = true
		cfg := "api_token = \"" + tok + "\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n"
		if _, err := config.Parse("t.toml", []byte(cfg)); err != nil {
			t.Errorf("the config refuses the generated token: %v", err)
		}
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"token", "extra"}, &out, &errb); code != 2 {
		t.Errorf("token with an argument: exit %d, want 2", code)
	}
}
