package web

import (
	"errors"
	"strings"
	"testing"
)

// TestPINRoundTrip ensures a stored PIN verifies and nothing else does.
func TestPINRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadPIN(dir); !errors.Is(err, ErrNoPIN) {
		t.Fatalf("no PIN yet: %v", err)
	}
	if err := SetPIN(dir, testPIN); err != nil {
		t.Fatal(err)
	}
	hash, err := LoadPIN(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(hash, testPIN) || !strings.HasPrefix(hash, "$argon2id$") {
		t.Fatalf("hash %q", hash)
	}
	if !VerifyPIN(hash, testPIN) {
		t.Fatal("right PIN refused")
	}
	for _, wrong := range []string{"", "246812", testPIN + " ", "2468130"} {
		if VerifyPIN(hash, wrong) {
			t.Fatalf("%q accepted", wrong)
		}
	}
	for _, bad := range []string{"", "$argon2id$", hash[:len(hash)-4], strings.Replace(hash, "t=2", "t=99", 1)} {
		if VerifyPIN(bad, testPIN) {
			t.Fatalf("malformed hash %q accepted", bad)
		}
	}
	// Two hashes of one PIN differ (fresh salt).
	h2, _ := HashPIN(testPIN)
	if h2 == hash {
		t.Fatal("salt not fresh")
	}
}

// TestCheckPINFormat ensures the PIN length and spacing rules.
func TestCheckPINFormat(t *testing.T) {
	for pin, ok := range map[string]bool{
		"12345": false, "123456": true, "密码密码密码": true, " 123456": false, "123456 ": false,
		strings.Repeat("9", MaxPINLength): true, strings.Repeat("9", MaxPINLength+1): false,
	} {
		if err := CheckPINFormat(pin); (err == nil) != ok {
			t.Errorf("%q: %v", pin, err)
		}
		if !ok && SetPIN(t.TempDir(), pin) == nil {
			t.Errorf("SetPIN took %q", pin)
		}
	}
}
