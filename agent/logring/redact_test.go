package logring

import (
	"fmt"
	"log/slog"
	"testing"

	"printgate/agent/config"
)

// TestScrub ensures every free-text form of a credential is redacted, and
// that ordinary text around it survives.
func TestScrub(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"login with Bearer abc.DEF-123_x", "login with Bearer [redacted]"},
		{"sent Authorization: Bearer abc123", "sent Authorization: [redacted]"},
		{"authorization=Basic dXNlcjpwYXNz", "authorization=[redacted]"},
		{"Cookie: session=abc; csrf=def\nnext line", "Cookie: [redacted]\nnext line"},
		{"X-Api-Key: k123", "X-Api-Key: [redacted]"},
		{"GET /pair?token=abc123&printer=kitchen", "GET /pair?token=[redacted]&printer=kitchen"},
		{"https://cloud:443/x?device_token=abc123", "https://cloud:443/x?device_token=[redacted]"},
		{"login failed: token=abc123", "login failed: token=[redacted]"},
		{"pin=1234 printer=kitchen", "pin=[redacted] printer=kitchen"},
		{"api_token = abc123", "api_token = [redacted]"},
		{`{"device_token":"abc123","printer":"bar"}`, `{"device_token":"[redacted]","printer":"bar"}`},
		{"{Token:abc123 Printer:kitchen}", "{Token:[redacted] Printer:kitchen}"},
		{"map[Authorization:[Bearer abc123] Accept:[*/*]]", "map[Authorization:[redacted]"},
		{"map[password:[abc123]]", "map[password:[redacted]]"},
		{"jwt eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl seen", "jwt [redacted] seen"},
		{"token=[redacted] already", "token=[redacted] already"},
		// Nothing secret: unchanged.
		{"printer kitchen offline: paper out", "printer kitchen offline: paper out"},
		{"task_no=ORD-1_KITCHEN_v1 seq=42 pinned=3", "task_no=ORD-1_KITCHEN_v1 seq=42 pinned=3"},
		{"the token expired", "the token expired"},
	} {
		if got := Scrub(tc.in); got != tc.want {
			t.Errorf("Scrub(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestSecretKey ensures the key rule catches every credential name the
// agent uses, in any case or spelling, and spares look-alikes.
func TestSecretKey(t *testing.T) {
	for _, k := range []string{
		"token", "api_token", "device_token", "DeviceToken", "apiToken", "devicetoken",
		"pin", "PIN", "manager_pin", "password", "secret", "client_secret",
		"Authorization", "authorization", "cookie", "Set-Cookie", "key", "api_key",
		"X-Api-Key", "APIKey", "tls_key",
	} {
		if !secretKey(k) {
			t.Errorf("secretKey(%q) = false, want true", k)
		}
	}
	for _, k := range []string{
		"printer", "task_no", "pinned", "spin", "monkey", "keyboard", "msg",
		"api_token_file", "tls_key_path", "auth_url", "",
	} {
		if secretKey(k) {
			t.Errorf("secretKey(%q) = true, want false", k)
		}
	}
}

// TestReplaceAttr ensures a secret key hides values of every kind, and that
// text of every kind is scrubbed.
func TestReplaceAttr(t *testing.T) {
	for _, tc := range []struct {
		groups []string
		a      slog.Attr
		want   string
	}{
		{nil, slog.Int("pin", 1234), Redacted},
		{nil, slog.String("Authorization", "Bearer abc"), Redacted},
		{[]string{"link", "auth"}, slog.String("value", "abc"), Redacted},
		{nil, slog.Any("err", fmt.Errorf("dial: token=abc rejected")), "dial: token=[redacted] rejected"},
		{nil, slog.Any("body", []byte("pin=1234")), "pin=[redacted]"},
		{nil, slog.Any("creds", struct{ Token string }{"abc"}), "{Token:[redacted]}"},
		{nil, slog.Any("creds", config.Secret("abc")), Redacted}, // its Format hides it
		{nil, slog.Int("seq", 42), "42"},
		{nil, slog.String("printer", "kitchen"), "kitchen"},
	} {
		got := ReplaceAttr(tc.groups, tc.a)
		if got.Key != tc.a.Key || got.Value.String() != tc.want {
			t.Errorf("ReplaceAttr(%v, %v) = %v, want %s=%s", tc.groups, tc.a, got, tc.a.Key, tc.want)
		}
	}
}
