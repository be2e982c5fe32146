package logring

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"printgate/agent/config"
	"printgate/internal/clock"
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
		{"Bearer token=abc123", "Bearer [redacted]"},
		{"token: token=abc123", "token: [redacted]"},
		{"token: token: abc123 seq=1", "token: [redacted] seq=1"},
		{"token=abc123== x", "token=[redacted] x"},
		{`{"device_token":"abc123`, `{"device_token":"[redacted]`},
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
		"X-Api-Key", "APIKey", "tls_key", "token2", "pin1",
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

// TestTokenNowhere ensures a token logged in every way the agent might log
// it (attribute, WithAttrs, nested group, secret group, message, an
// Authorization header string, a URL, an error, bytes, a struct, a JSON
// blob, a config.Secret) appears in no line of the ring and no tail output,
// while every record is still there.
func TestTokenNowhere(t *testing.T) {
	const tok = "tok_9f8E7d6C5b4A3z2Y1x"
	clock := clock.NewFakeClock(t0)
	r := New(Options{Clock: clock})
	tr := startTail(t, r, TailOptions{Follow: true, Level: slog.LevelDebug}, false)
	waitTimer(t, clock, t0.Add(DefaultMaxDuration)) // following

	log := slog.New(r.Handler(slog.LevelDebug))
	records := []func(){
		func() { log.Info("attr", "token", tok) },
		func() { log.Info("attr", "api_token", tok) },
		func() { log.Info("attr", "device_token", tok) },
		func() { log.Info("attr", "DeviceToken", tok) },
		func() { log.Info("attr", "pin", tok) },
		func() { log.Info("attr", "password", tok) },
		func() { log.Info("attr", "secret", tok) },
		func() { log.Info("attr", "Authorization", "Bearer "+tok) },
		func() { log.Info("attr", "cookie", "pg_session="+tok) },
		func() { log.Info("attr", "key", tok) },
		func() { log.With("api_token", tok).Info("with") },
		func() {
			log.WithGroup("link").Info("nested", slog.Group("handshake", slog.String("device_token", tok)))
		},
		func() {
			log.Info("secret group", slog.Group("authorization", slog.String("scheme", "Bearer"), slog.String("value", tok)))
		},
		func() { log.WithGroup("auth").With("value", tok).Info("secret WithGroup") },
		func() { log.Info("dialing with Bearer " + tok) },
		func() {
			log.Info("handshake headers", "headers", "Authorization: Bearer "+tok+"\r\nX-Printgate-Agent: a1")
		},
		func() { log.Info("header map", "h", map[string][]string{"Authorization": {"Bearer " + tok}}) },
		func() { log.Debug("GET /pair?token=" + tok + "&printer=kitchen") },
		func() { log.Info("url", "u", "https://cloud.example/ws?token="+tok) },
		func() { log.Error("link", "err", fmt.Errorf("handshake: Authorization: Bearer %s: 401", tok)) },
		func() { log.Info("bytes", "body", []byte(`{"device_token":"`+tok+`"}`)) },
		func() { log.Info("struct", "cfg", struct{ APIToken, Printer string }{tok, "kitchen"}) },
		func() { log.Info("secret type", "creds", config.Secret(tok)) },
		func() { log.Info("secret type", slog.Group("g", "creds", config.Secret(tok))) },
	}
	for _, rec := range records {
		rec()
	}

	var outputs []string
	outputs = append(outputs, r.Lines()...)
	for len(outputs) < 2*len(records) {
		outputs = append(outputs, tr.next()...)
	}
	err := r.Tail(context.Background(), TailOptions{Lines: 100, Level: slog.LevelDebug},
		func(l []string) error { outputs = append(outputs, l...); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(outputs) != 3*len(records) {
		t.Fatalf("%d lines in ring and tails, want %d", len(outputs), 3*len(records))
	}
	for _, line := range outputs {
		if strings.Contains(line, tok) || strings.Contains(line, tok[4:]) {
			t.Errorf("token leaked: %s", line)
		}
		if !strings.Contains(line, Redacted) {
			t.Errorf("no redaction in %s", line)
		}
	}
}

// FuzzScrub ensures a token written in any of the free-text forms, between
// any other text, never survives Scrub.
func FuzzScrub(f *testing.F) {
	const tok = "tok9f8E7d6C5b4A3"
	forms := []string{"token=", "token: ", "Bearer ", "Authorization: ", "api_token=",
		`"device_token":"`, "pin=", "?token=", "Cookie: a=", "password = '"}
	f.Add("GET /x", "&printer=kitchen", uint8(0))
	f.Add(`{"a":1,`, `","b":2}`, uint8(5))
	f.Add("token:", "", uint8(2))
	f.Fuzz(func(t *testing.T, prefix, suffix string, form uint8) {
		s := prefix + " " + forms[int(form)%len(forms)] + tok + " " + suffix
		if got := Scrub(s); strings.Contains(got, tok) {
			t.Fatalf("Scrub(%q) = %q keeps the token", s, got)
		}
	})
}

// TestScrubKeepsErrorWords ensures redaction hides secret values, not the
// words of an error that follow a key-like name ("read manager
// PIN /var/lib/printgate/manager-pin: open …: permission denied" once came out as
// "…: [redacted] …: [redacted] denied"), while a real value after the same
// keys is still hidden.
func TestScrubKeepsErrorWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Kept: a file named like a key, and an error's reason after a key.
		{"read manager PIN /var/lib/printgate/manager-pin: open /var/lib/printgate/manager-pin: permission denied",
			"read manager PIN /var/lib/printgate/manager-pin: open /var/lib/printgate/manager-pin: permission denied"},
		{`cannot read C:\ProgramData\printgate\manager-pin: permission denied`, `cannot read C:\ProgramData\printgate\manager-pin: permission denied`},
		{"load the device token: open /var/lib/printgate/device-token: no such file or directory",
			"load the device token: open /var/lib/printgate/device-token: no such file or directory"},
		{"session: expired", "session: expired"},
		// The login's error as the agent logs it, fix included.
		{"cannot read the manager PIN file /var/lib/printgate/manager-pin: permission denied. fix: sudo chown printgate:printgate /var/lib/printgate/manager-pin",
			"cannot read the manager PIN file /var/lib/printgate/manager-pin: permission denied. fix: sudo chown printgate:printgate /var/lib/printgate/manager-pin"},
		// Hidden: the same keys with a value.
		{"manager-pin: 246810", "manager-pin: [redacted]"},
		{"device token: tok9f8E7d6C5b4A3", "device token: [redacted]"},
		{"token=open", "token=[redacted]"},
		{"token:open", "token:[redacted]"},
		{"pin: Open", "pin: [redacted]"},
		{"/x?token=abc123", "/x?token=[redacted]"},
	} {
		if got := Scrub(tc.in); got != tc.want {
			t.Errorf("Scrub(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
