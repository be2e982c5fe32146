package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"printgate/drivers"
	"printgate/drivers/escpos"
)

const sampleConfig = "../../testdata/config/printgate.toml"

// headerLines returns the lines of the [[printers]] headers in src, so tests
// do not break when the sample's comments change.
func headerLines(src string) []int {
	var out []int
	for i, ln := range strings.Split(src, "\n") {
		if strings.TrimSpace(ln) == "[[printers]]" {
			out = append(out, i+1)
		}
	}
	return out
}

// urlLines lists the line of the url key after each [[printers]] header.
func urlLines(src string) []int {
	var out []int
	in := false
	for i, ln := range strings.Split(src, "\n") {
		switch s := strings.TrimSpace(ln); {
		case s == "[[printers]]":
			in = true
		case in && strings.HasPrefix(s, "url"):
			out = append(out, i+1)
			in = false
		}
	}
	return out
}

func mustTarget(t *testing.T, raw string) drivers.Target {
	t.Helper()
	tgt, err := drivers.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

func mustProfile(t *testing.T, name string, o escpos.ProfileOverrides) escpos.Profile {
	t.Helper()
	p, err := escpos.LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = p.With(o); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// TestLoadSampleConfig ensures the documented sample loads with every value
// exactly as written, the per-printer values overriding [defaults] and the
// rest inherited.
func TestLoadSampleConfig(t *testing.T) {
	// The sample ships no token: it names a file, made here as
	// `printgate token > api-token.txt` would.
	src, err := os.ReadFile(sampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sampleConfig := filepath.Join(dir, "printgate.toml")
	const token = "Q7RZKX3M2VDPY4NHTW6BJ5CF"
	if err := os.WriteFile(sampleConfig, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "api-token.txt"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(sampleConfig)
	if err != nil {
		t.Fatalf("sample config does not load:\n%v", err)
	}
	hdr := headerLines(string(src))
	urls := urlLines(string(src))
	if len(hdr) != 3 {
		t.Fatalf("sample has %d [[printers]] headers, test expects 3", len(hdr))
	}
	dataDir := "/var/lib/printgate"
	logFile := "/var/log/printgate/agent.log"
	if runtime.GOOS == "windows" { // not absolute there: taken relative to the config
		dataDir = filepath.Join(filepath.Dir(sampleConfig), dataDir)
		logFile = filepath.Join(filepath.Dir(sampleConfig), logFile)
	}
	want := &Config{
		Path:     sampleConfig,
		DataDir:  dataDir,
		Listen:   "127.0.0.1:8631",
		APIToken: token, APITokenFile: filepath.Join(dir, "api-token.txt"),
		Cloud: &Cloud{URL: "wss://print.example.com/agent/v1", AuthURL: "https://print.example.com/oauth",
			OutboxMaxEvents: 50000, OutboxMaxAge: 3 * 24 * time.Hour, AckTimeout: 30 * time.Second},
		Defaults: Defaults{
			Timeout: 2 * time.Minute, RetryBase: 500 * time.Millisecond, RetryCap: 20 * time.Second,
			RetryFactor: 3, RetryJitter: 0.1, MaxAttempts: 10,
			FailoverAfter: 30 * time.Second, FailoverFailures: 2, FailbackAfter: 2 * time.Minute,
			OnUnknown: "hold", MaxUnknown: 3, Profile: "epson-58", JobTimeout: 45 * time.Second,
		},
		Spool: Spool{MaxSize: 512 << 20, KeepFree: 256 << 20, Retention: 14 * 24 * time.Hour, DedupeWindow: 30 * 24 * time.Hour,
			Quota: map[string]Quota{DoorAPI: {Percent: 50}, DoorCloud: {Percent: 50}, DoorRaw: {Percent: 20}, DoorReprint: {Percent: 25}},
			Rate:  map[string]float64{DoorAPI: 200, DoorCloud: 200, DoorRaw: 20, DoorReprint: 20}},
		Log: Log{Level: slog.LevelDebug, File: logFile, MaxSizeMB: 20, MaxBackups: 3},
		Printers: []Printer{
			{
				Name: "kitchen", URL: "tcp://192.168.1.50:9100", Target: mustTarget(t, "tcp://192.168.1.50:9100"),
				ProfileName: "epson-80", Profile: mustProfile(t, "epson-80", escpos.ProfileOverrides{}),
				Backup: "bar", OnUnknown: "reprint-marked", MaxUnknown: 4,
				Timeout: 3 * time.Minute, FailoverAfter: 30 * time.Second, FailbackAfter: 2 * time.Minute, FailoverFailures: 2,
				RawListen: "0.0.0.0:9101", RawIdleGap: 2 * time.Second, RawDuplicateWindow: 10 * time.Second, RawStatus: "spooled",
				RawFirstByteTimeout: 10 * time.Second, RawMaxPerAddress: 2,
				RawAllow:   []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")},
				JobTimeout: 45 * time.Second,
				Line:       hdr[0],
				URLLine:    urls[0],
			},
			{
				Name: "bar", URL: "serial:///dev/ttyUSB0?baud=19200&flow=rtscts", Target: mustTarget(t, "serial:///dev/ttyUSB0?baud=19200&flow=rtscts"),
				ProfileName: "xprinter-80",
				Profile:     mustProfile(t, "xprinter-80", escpos.ProfileOverrides{Columns: ptr(42), Beep: ptr(escpos.BeepEpson)}),
				OnUnknown:   "hold", MaxUnknown: 3,
				Timeout: 2 * time.Minute, FailoverAfter: 10 * time.Second, FailbackAfter: 5 * time.Minute, FailoverFailures: 5,
				RawIdleGap: 2 * time.Second, RawDuplicateWindow: 10 * time.Second, RawStatus: "spooled",
				RawFirstByteTimeout: 10 * time.Second, RawMaxPerAddress: 2,
				JobTimeout: 90 * time.Second,
				Line:       hdr[1],
				URLLine:    urls[1],
			},
			{
				Name: "front", URL: "usb:///dev/usb/lp0", Target: mustTarget(t, "usb:///dev/usb/lp0"),
				ProfileName: "epson-58",
				Profile: mustProfile(t, "epson-58", escpos.ProfileOverrides{
					Encoding: ptr("PC858"), CodePage: ptr(19), Cutter: ptr(escpos.CutterPartialOnly), Ack: ptr(escpos.AckRealTime),
				}),
				OnUnknown: "hold", MaxUnknown: 3,
				Timeout: 2 * time.Minute, FailoverAfter: 30 * time.Second, FailbackAfter: 2 * time.Minute, FailoverFailures: 2,
				RawIdleGap: 2 * time.Second, RawDuplicateWindow: 10 * time.Second, RawStatus: "spooled",
				RawFirstByteTimeout: 10 * time.Second, RawMaxPerAddress: 2,
				JobTimeout: 45 * time.Second,
				Line:       hdr[2],
				URLLine:    urls[2],
			},
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		got, _ := json.MarshalIndent(cfg, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("sample config loaded as\n%s\nwant\n%s", got, exp)
		if cfg.APIToken != want.APIToken {
			t.Errorf("api token differs")
		}
	}
	// The overrides must really change the resolved profile, or the test
	// above would pass with overrides ignored.
	if bar, _ := cfg.Printer("bar"); bar.Profile.Columns != 42 || bar.Profile.Beep != escpos.BeepEpson {
		t.Errorf("bar profile = %+v, want columns 42 and the epson beep", bar.Profile)
	}
	if front, _ := cfg.Printer("front"); front.Profile.Name != "epson-58" || front.Profile.Encoding != "PC858" {
		t.Errorf("front profile = %+v, want epson-58 with PC858", front.Profile)
	}
}

// TestConfigDefaults ensures a minimal config gets every documented default.
// TestConfigRawPort reads a printer's raw port and its job boundary and
// retry window, and their defaults when only the address is given.
func TestConfigRawPort(t *testing.T) {
	src := okTop + "[[printers]]\nname = \"a\"\nurl = \"tcp://10.0.0.5\"\nraw_listen = \"0.0.0.0:9101\"\n" +
		"[[printers]]\nname = \"b\"\nurl = \"tcp://10.0.0.6\"\nraw_listen = \"127.0.0.1:9102\"\nraw_idle_gap = \"500ms\"\nraw_duplicate_window = \"30s\"\nraw_status = \"printer\"\n" +
		"[[printers]]\nname = \"c\"\nurl = \"tcp://10.0.0.7\"\n"
	cfg, err := Parse("/etc/printgate/printgate.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := func(i int) [4]any {
		p := cfg.Printers[i]
		return [4]any{p.RawListen, p.RawIdleGap, p.RawDuplicateWindow, p.RawStatus}
	}
	if g := got(0); g != [4]any{"0.0.0.0:9101", 2 * time.Second, 10 * time.Second, "spooled"} {
		t.Errorf("a: %v", g)
	}
	if g := got(1); g != [4]any{"127.0.0.1:9102", 500 * time.Millisecond, 30 * time.Second, "printer"} {
		t.Errorf("b: %v", g)
	}
	if g := got(2); g[0] != "" {
		t.Errorf("c has a raw port it did not ask for: %v", g)
	}
}

// TestConfigRawHold reads the bounds on raw connections that carry no job
// (so no idle client holds the port) and their defaults.
func TestConfigRawHold(t *testing.T) {
	src := okTop + "[[printers]]\nname = \"a\"\nurl = \"tcp://10.0.0.5\"\nraw_listen = \":9101\"\n" +
		"[[printers]]\nname = \"b\"\nurl = \"tcp://10.0.0.6\"\nraw_listen = \":9102\"\nraw_first_byte_timeout = \"3s\"\nraw_max_per_address = 4\n" +
		"raw_allow = [\"192.168.1.7/24\", \"10.0.0.5\", \"::ffff:10.0.0.9\", \"fd00::/64\"]\n"
	cfg, err := Parse("/etc/printgate/printgate.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Printers[0], cfg.Printers[1]
	if a.RawFirstByteTimeout != 10*time.Second || a.RawMaxPerAddress != 2 || a.RawAllow != nil {
		t.Errorf("a: %v %d %v, want the defaults 10s, 2, no allow-list", a.RawFirstByteTimeout, a.RawMaxPerAddress, a.RawAllow)
	}
	want := []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24"), netip.MustParsePrefix("10.0.0.5/32"),
		netip.MustParsePrefix("10.0.0.9/32"), netip.MustParsePrefix("fd00::/64")}
	if b.RawFirstByteTimeout != 3*time.Second || b.RawMaxPerAddress != 4 || !slices.Equal(b.RawAllow, want) {
		t.Errorf("b: %v %d %v, want 3s, 4, %v", b.RawFirstByteTimeout, b.RawMaxPerAddress, b.RawAllow, want)
	}
}

func TestConfigDefaults(t *testing.T) {
	src := `api_token = "tok-0123456789abcdef01234"

[[printers]]
name = "kitchen"
url  = "tcp://10.0.0.5"
`
	cfg, err := Parse("/etc/printgate/printgate.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	week := 7 * 24 * time.Hour
	want := &Config{
		Path:     "/etc/printgate/printgate.toml",
		DataDir:  DefaultDataDir(),
		Listen:   "127.0.0.1:8631",
		APIToken: "tok-0123456789abcdef01234",
		Defaults: Defaults{
			Timeout: 90 * time.Second, RetryBase: time.Second, RetryCap: 15 * time.Second,
			RetryFactor: 2, RetryJitter: 0.2, FailoverAfter: 15 * time.Second, FailbackAfter: 60 * time.Second,
			FailoverFailures: 3, MaxAttempts: 0, OnUnknown: "reprint-marked", MaxUnknown: 2, Profile: "epson-80",
			JobTimeout: 30 * time.Second,
		},
		Spool: Spool{MaxSize: 0, Retention: week, DedupeWindow: week, Quota: DefaultQuotas(), Rate: DefaultRates()},
		Log:   Log{Level: slog.LevelInfo, File: filepath.Join(DefaultDataDir(), "printgate.log"), MaxSizeMB: 10, MaxBackups: 5},
		Printers: []Printer{{
			Name: "kitchen", URL: "tcp://10.0.0.5", Target: mustTarget(t, "tcp://10.0.0.5"),
			ProfileName: "epson-80", Profile: mustProfile(t, "epson-80", escpos.ProfileOverrides{}),
			OnUnknown: "reprint-marked", MaxUnknown: 2, Timeout: 90 * time.Second, FailoverAfter: 15 * time.Second,
			FailbackAfter: 60 * time.Second, FailoverFailures: 3, JobTimeout: 30 * time.Second, Line: 3, URLLine: 5,
			RawIdleGap: 2 * time.Second, RawDuplicateWindow: 10 * time.Second, RawStatus: "spooled",
			RawFirstByteTimeout: 10 * time.Second, RawMaxPerAddress: 2,
		}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
	if cfg.Cloud != nil {
		t.Errorf("Cloud = %+v without a [cloud] table, want nil (store-only)", cfg.Cloud)
	}
	if _, ok := cfg.Printer("bar"); ok {
		t.Error(`Printer("bar") found a printer that is not configured`)
	}
	if pc, ok := cfg.Printer("kitchen"); !ok || pc != &cfg.Printers[0] {
		t.Error(`Printer("kitchen") must return the configured entry itself`)
	}
}

// TestConfigDedupeFollowsRetention ensures dedupe_window defaults to the
// configured retention, not to the built-in one.
func TestConfigDedupeFollowsRetention(t *testing.T) {
	src := "api_token = \"tok-0123456789abcdef01234\"\n[spool]\nretention = \"10d\"\n[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\n"
	cfg, err := Parse("c.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Spool.DedupeWindow != 10*24*time.Hour {
		t.Errorf("dedupe_window = %v, want the retention 240h", cfg.Spool.DedupeWindow)
	}
}

// TestConfigDoorLimits ensures the doors' quotas take a share or a size,
// the rates a number (0 turns one off), and the doors left out keep their
// defaults.
func TestConfigDoorLimits(t *testing.T) {
	src := okTop + "[spool]\nmax_size = \"100MiB\"\nquota_raw = \"10%\"\nquota_cloud = \"32MiB\"\nrate_raw = 0\nrate_api = 2.5\n" + okPrinter
	cfg, err := Parse("c.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Spool
	if s.Quota[DoorRaw] != (Quota{Percent: 10}) || s.Quota[DoorCloud] != (Quota{Bytes: 32 << 20}) || s.Quota[DoorAPI] != (Quota{Percent: 50}) {
		t.Errorf("quotas %v", s.Quota)
	}
	if got := s.Quota[DoorRaw].Of(s.MaxSize); got != 10<<20 {
		t.Errorf("10%% of 100MiB is %d", got)
	}
	if s.Quota[DoorCloud].Of(1<<30) != 32<<20 {
		t.Errorf("a size quota depends on the cap: %d", s.Quota[DoorCloud].Of(1<<30))
	}
	if s.Rate[DoorRaw] != 0 || s.Rate[DoorAPI] != 2.5 || s.Rate[DoorCloud] != 200 {
		t.Errorf("rates %v", s.Rate)
	}
}

// wantErr is one problem a bad config must report: at the line of the
// marker "#!<mark>" in the source (or at line when mark is empty), with all
// of words in the message.
type wantErr struct {
	mark  string
	line  int
	words []string
}

const (
	okTop     = "api_token = \"tok-0123456789abcdef01234\"\n"
	okPrinter = "[[printers]]\nname = \"p\"\nurl = \"tcp://10.9.9.9\"\n"
)

func markLine(t *testing.T, src, mark string) int {
	t.Helper()
	for i, ln := range strings.Split(src, "\n") {
		if strings.Contains(ln, "#!"+mark+" ") || strings.HasSuffix(ln, "#!"+mark) {
			return i + 1
		}
	}
	t.Fatalf("marker #!%s not in source", mark)
	return 0
}

// checkErrors asserts err lists exactly the wanted problems, each for file
// at its line with its words.
func checkErrors(t *testing.T, file, src string, err error, want []wantErr) {
	t.Helper()
	if err == nil {
		t.Fatalf("config was accepted; want %d problem(s)", len(want))
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, want Errors: %v", err, err)
	}
	if len(errs) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(errs), len(want), err)
	}
	for _, w := range want {
		line := w.line
		if w.mark != "" {
			line = markLine(t, src, w.mark)
		}
		found := false
		for _, e := range errs {
			if e.File != file || e.Line != line {
				continue
			}
			all := true
			for _, word := range w.words {
				if !strings.Contains(e.Msg, word) {
					all = false
				}
			}
			if all {
				found = true
				prefix := fmt.Sprintf("%s:%d: ", file, line)
				if !strings.HasPrefix(e.Error(), prefix) || !strings.Contains(err.Error(), e.Error()) {
					t.Errorf("problem %q does not read as %q... in the combined error", e.Error(), prefix)
				}
			}
		}
		if !found {
			t.Errorf("no problem at %s:%d with %q; got:\n%v", file, line, w.words, err)
		}
	}
	if !slices.IsSortedFunc(errs, func(a, b Error) int { return a.Line - b.Line }) {
		t.Errorf("problems are not in line order:\n%v", err)
	}
}

// TestConfigErrors ensures each kind of mistake is reported with the file,
// the line to look at, and words that say what is wrong.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []wantErr
	}{
		{"toml syntax", okTop + "listen = \":8631 #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"not valid TOML"}}}},
		{"toml duplicate key", okTop + "listen = \":1\"\nlisten = \":2\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"not valid TOML", "listen"}}}},
		{"unknown top-level key", okTop + "lisen = \":8631\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{`unknown key "lisen"`, `did you mean "listen"?`}}}},
		{"unknown table", okTop + "[printer] #!a\nname = \"x\"\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{`unknown key "printer"`, `did you mean "printers"?`}}}},
		{"unknown key in printer", okTop + "[[printers]]\nname = \"kitchen\"\nurl = \"tcp://h\"\nbakup = \"bar\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`unknown key "bakup" in [[printers]] "kitchen" (did you mean "backup"?)`}}}},
		{"unknown key in cloud", okTop + "[cloud]\nurl = \"wss://h/a\"\nauth_url = \"https://h/o\"\nauthurl = \"x\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{`unknown key "authurl" in [cloud]`, `"auth_url"`}}}},
		{"top-level key under a table", okTop + "[cloud]\nurl = \"wss://h/a\"\nauth_url = \"https://h/o\"\nlisten = \":1\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{`unknown key "listen" in [cloud]`, "top of the file"}}}},
		{"unknown keys in defaults spool log", okTop + "[defaults]\ntimeot = \"1s\" #!a\n[spool]\nretension = \"1d\" #!b\n[log]\nlevle = \"info\" #!c\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{`"timeot" in [defaults]`, `"timeout"`}},
				{mark: "b", words: []string{`"retension" in [spool]`, `"retention"`}},
				{mark: "c", words: []string{`"levle" in [log]`, `"level"`}},
			}},
		{"duration as number", okTop + "[defaults]\ntimeout = 90 #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"timeout in [defaults]", `duration in quotes`, "whole number"}}}},
		{"name as number", okTop + "[[printers]]\nname = 5 #!a\nurl = \"tcp://h\"\n",
			[]wantErr{{mark: "a", words: []string{"name in [[printers]] #1", "text", "whole number"}}}},
		{"override as text", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\ndots = \"576\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`dots in [[printers]] "p"`, "whole number", "not text"}}}},
		{"raw_listen not an address", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nraw_listen = \"9101\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`"9101" is not an address to listen on`}}}},
		{"raw_listen on the API port", okTop + "listen = \"0.0.0.0:8631\"\n[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nraw_listen = \"127.0.0.1:8631\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`"127.0.0.1:8631" takes the port of listen`}}}},
		{"raw_listen shared", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nraw_listen = \":9101\"\n[[printers]]\nname = \"q\"\nurl = \"tcp://i\"\nraw_listen = \"10.0.0.2:9101\" #!a\nraw_idle_gap = \"0s\" #!b\n",
			[]wantErr{
				{mark: "a", words: []string{`"10.0.0.2:9101" is already the raw port of`, `"p"`}},
				{mark: "b", words: []string{"raw_idle_gap", "longer than zero"}},
			}},
		{"raw bounds", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nraw_listen = \":9101\"\nraw_first_byte_timeout = \"0s\" #!a\nraw_max_per_address = 0 #!b\nraw_allow = [\"10.0.0.5\", \"pos-1\", \"10.0.0.0/33\"] #!c\n",
			[]wantErr{
				{mark: "a", words: []string{`raw_first_byte_timeout in [[printers]] "p"`, "longer than zero"}},
				{mark: "b", words: []string{`raw_max_per_address in [[printers]] "p"`, "at least 1"}},
				{mark: "c", words: []string{`raw_allow in [[printers]] "p"`, `"pos-1" is not an address or a CIDR range`, `"192.168.1.0/24"`}},
				{mark: "c", words: []string{`raw_allow in [[printers]] "p"`, `"10.0.0.0/33" is not an address or a CIDR range`}},
			}},
		{"raw_allow empty or not a list", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nraw_listen = \":9101\"\nraw_allow = [] #!a\n[[printers]]\nname = \"q\"\nurl = \"tcp://i\"\nraw_listen = \":9102\"\nraw_allow = \"10.0.0.5\" #!b\n",
			[]wantErr{
				{mark: "a", words: []string{`raw_allow in [[printers]] "p"`, "is empty", "refuse every POS", "remove raw_allow"}},
				{mark: "b", words: []string{`raw_allow in [[printers]] "q"`, "must be a list of POS addresses", "not text"}},
			}},
		{"raw_status not a choice", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nraw_listen = \":9101\"\nraw_status = \"live\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`raw_status in [[printers]] "p"`, `"live" is not a choice`, `"spooled"`, `"printer"`}}}},
		{"unknown code tables", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\ncode_tables = \"star\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`unknown code tables "star"`, `"epson"`, `"xprinter"`}}}},
		{"printers not tables", okTop + "printers = \"kitchen\" #!a\n",
			[]wantErr{{mark: "a", words: []string{"printers", "[[printers]] tables"}}}},
		{"single brackets", okTop + "[printers] #!a\nname = \"p\"\nurl = \"tcp://h\"\n",
			[]wantErr{{mark: "a", words: []string{"printers", "double brackets"}}}},
		{"cloud not a table", okTop + "cloud = \"wss://h\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"cloud", "a table"}}}},
		{"retry_factor as text", okTop + "[defaults]\nretry_factor = \"2\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"retry_factor", "a number"}}}},
		{"missing name and url", okTop + "[[printers]] #!a\nprofile = \"epson-80\"\n",
			[]wantErr{
				{mark: "a", words: []string{"[[printers]] #1 has no name"}},
				{mark: "a", words: []string{"[[printers]] #1 has no url"}},
			}},
		{"duplicate printer name", okTop + "[[printers]] #!h\nname = \"kitchen\"\nurl = \"tcp://h1\"\n[[printers]]\nname = \"kitchen\" #!a\nurl = \"tcp://h2\"\n",
			[]wantErr{{mark: "a", words: []string{`"kitchen" is already the name of the printer at line 2`}}}},
		{"invalid printer name", okTop + "[[printers]]\nname = \"kitchen 1\" #!a\nurl = \"tcp://h\"\n",
			[]wantErr{{mark: "a", words: []string{`"kitchen 1" cannot be a printer name`, "letters, digits"}}}},
		{"bad url", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp//10.0.0.5\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`url in [[printers]] "p"`, "has no scheme"}}}},
		{"bad serial url", okTop + "[[printers]]\nname = \"p\"\nurl = \"serial:///dev/ttyUSB0?baud=1234\" #!a\n",
			[]wantErr{{mark: "a", words: []string{"bad baud"}}}},
		{"same printer twice", okTop + "[[printers]]\nname = \"a\"\nurl = \"tcp://10.0.0.5\"\n[[printers]]\nname = \"b\"\nurl = \"tcp://10.0.0.5:9100\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`url in [[printers]] "b"`, `same printer as "a" at line 2`, "backup"}}}},
		{"unknown profile", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nprofile = \"epson80\" #!a\n",
			[]wantErr{{mark: "a", words: []string{`unknown printer profile "epson80"`, "known: epson-58, epson-80, oneway-80, xprinter-58, xprinter-80", `did you mean "epson-80"?`}}}},
		{"unknown default profile blamed once", okTop + "[defaults]\nprofile = \"star\" #!a\n" + okPrinter + "[[printers]]\nname = \"q\"\nurl = \"tcp://h2\"\n",
			[]wantErr{{mark: "a", words: []string{"profile in [defaults]", `unknown printer profile "star"`}}}},
		{"bad overrides", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\ndots = 10 #!a\nbeep = \"loud\" #!b\n",
			[]wantErr{
				{mark: "a", words: []string{`dots in [[printers]] "p"`, "dots 10 out of range 64..2048"}},
				{mark: "b", words: []string{`beep in [[printers]] "p"`, `unknown beep dialect "loud"`, "none, epson, clone"}},
			}},
		{"several override problems from the profile", okTop + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\ncolumns = 2 #!a\nencoding = \"UTF8\" #!b\n",
			[]wantErr{
				{mark: "a", words: []string{"columns 2 out of range"}},
				{mark: "b", words: []string{`unknown encoding "UTF8"`}},
			}},
		{"unknown backup", okTop + "[[printers]]\nname = \"kitchen\"\nurl = \"tcp://h1\"\nbackup = \"bra\" #!a\n[[printers]]\nname = \"bar\"\nurl = \"tcp://h2\"\n",
			[]wantErr{{mark: "a", words: []string{`no printer called "bra"`, `did you mean "bar"?`}}}},
		{"own backup", okTop + "[[printers]]\nname = \"kitchen\"\nurl = \"tcp://h1\"\nbackup = \"kitchen\" #!a\n",
			[]wantErr{{mark: "a", words: []string{"its own backup"}}}},
		{"backup cycle", okTop +
			"[[printers]]\nname = \"kitchen\"\nurl = \"tcp://h1\"\nbackup = \"bar\" #!a\n" +
			"[[printers]]\nname = \"bar\"\nurl = \"tcp://h2\"\nbackup = \"front\"\n" +
			"[[printers]]\nname = \"front\"\nurl = \"tcp://h3\"\nbackup = \"kitchen\"\n",
			[]wantErr{{mark: "a", words: []string{"loop", "kitchen → bar → front → kitchen"}}}},
		{"backup cycle entered from outside", okTop +
			"[[printers]]\nname = \"door\"\nurl = \"tcp://h0\"\nbackup = \"bar\"\n" +
			"[[printers]]\nname = \"bar\"\nurl = \"tcp://h1\"\nbackup = \"front\" #!a\n" +
			"[[printers]]\nname = \"front\"\nurl = \"tcp://h2\"\nbackup = \"bar\"\n",
			[]wantErr{{mark: "a", words: []string{"bar → front → bar"}}}},
		{"bad on_unknown", okTop + "[defaults]\non_unknown = \"reprint\" #!a\n[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\non_unknown = \"skip\" #!b\n",
			[]wantErr{
				{mark: "a", words: []string{"on_unknown in [defaults]", `"reprint" is not a choice`, "reprint-marked", "hold"}},
				{mark: "b", words: []string{`on_unknown in [[printers]] "p"`, `"skip"`}},
			}},
		{"bad max_unknown", okTop + "[defaults]\nmax_unknown = 0 #!a\n[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nmax_unknown = -1 #!b\n",
			[]wantErr{
				{mark: "a", words: []string{"max_unknown in [defaults]", "at least 1", "held for a manager"}},
				{mark: "b", words: []string{`max_unknown in [[printers]] "p"`, "at least 1"}},
			}},
		{"bad durations", okTop + "[defaults]\ntimeout = \"abc\" #!a\nretry_base = \"0s\" #!b\nfailback_after = \"-5s\" #!c\n[spool]\nretention = \"1.5d\" #!d\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{`"abc" is not a duration`, `"90s"`}},
				{mark: "b", words: []string{"retry_base in [defaults]", "0s must be longer than zero"}},
				{mark: "c", words: []string{"failback_after", "-5s must be longer than zero"}},
				{mark: "d", words: []string{`"1.5d" is not a duration`}},
			}},
		{"retry_cap below retry_base", okTop + "[defaults]\nretry_base = \"30s\"\nretry_cap = \"10s\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"retry_cap (10s) is shorter than retry_base (30s)"}}}},
		{"retry_base above default cap", okTop + "[defaults]\nretry_base = \"30s\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"retry_base in [defaults]", "retry_cap (15s) is shorter than retry_base (30s)"}}}},
		{"failover_failures below 1", okTop + "[defaults]\nfailover_failures = 0 #!a\n[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\nfailover_failures = -1 #!b\n",
			[]wantErr{
				{mark: "a", words: []string{"failover_failures in [defaults]", "at least 1"}},
				{mark: "b", words: []string{`failover_failures in [[printers]] "p"`, "at least 1"}},
			}},
		{"bad retry numbers", okTop + "[defaults]\nretry_factor = 0.5 #!a\nretry_jitter = 1.5 #!b\nmax_attempts = -1 #!c\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{"retry_factor", "below 1"}},
				{mark: "b", words: []string{"retry_jitter", "between 0 and 1"}},
				{mark: "c", words: []string{"max_attempts", "negative"}},
			}},
		{"api token missing", "listen = \":8631\"\n" + okPrinter,
			[]wantErr{{line: 1, words: []string{"no api_token", "api_token_file"}}}},
		{"api token twice", okTop + "api_token_file = \"token.txt\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"not both"}}}},
		{"api token empty", "api_token = \" \" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"api_token", "is empty"}}}},
		{"api token short", "api_token = \" s3cret-pos-token \" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"api_token", "is 16 characters", "at least 24", "printgate token"}}}},
		{"bad listen", okTop + "listen = \"8631\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{`listen: "8631" is not an address`, `":8631"`}}}},
		{"listen port out of range", okTop + "listen = \":99999\" #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"port", "1 to 65535"}}}},
		{"bad cloud urls", okTop + "[cloud]\nurl = \"https://print.example.com/agent\" #!a\nauth_url = \"ftp://print.example.com\" #!b\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{"url in [cloud]", "must start with ws:// or wss://"}},
				{mark: "b", words: []string{"auth_url in [cloud]", "must start with http:// or https://"}},
			}},
		{"cloud addresses in clear across the network", okTop + "[cloud]\nurl = \"ws://192.168.1.10:8080/agent\" #!a\nauth_url = \"http://print.example.com/oauth\" #!b\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{"url in [cloud]", "ws:// to 192.168.1.10, which is not this machine", "use wss://", "device token"}},
				{mark: "b", words: []string{"auth_url in [cloud]", "http:// to print.example.com, which is not this machine", "use https://", "in clear"}},
			}},
		{"cloud url without host", okTop + "[cloud]\nurl = \"wss:///agent\" #!a\nauth_url = \"https://h\"\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"no server name"}}}},
		{"cloud without urls", okTop + "[cloud] #!a\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{"[cloud] has no url", "store-only"}},
				{mark: "a", words: []string{"[cloud] has no auth_url"}},
			}},
		{"bad spool", okTop + "[spool]\nmax_size = \"lots\" #!a\nretention = \"7d\"\ndedupe_window = \"1d\" #!b\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{`"lots" is not a size`, "512MiB"}},
				{mark: "b", words: []string{"dedupe_window", "1d is shorter than retention (7d)"}},
			}},
		{"spool too small", okTop + "[spool]\nmax_size = 1024 #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"1024 is too small", "8MiB"}}}},
		{"spool negative", okTop + "[spool]\nmax_size = -1 #!a\n" + okPrinter,
			[]wantErr{{mark: "a", words: []string{"-1 must not be negative", "0 means the default"}}}},
		{"bad door limits", okTop + "[spool]\nkeep_free = -5 #!a\nquota_raw = \"0%\" #!b\nquota_api = \"150%\" #!c\nquota_cloud = 1000 #!d\nquota_reprint = \"lots%\" #!e\nrate_raw = -1 #!f\nrate_api = \"fast\" #!g\nquota_rw = \"5%\" #!h\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{"keep_free", "must not be negative"}},
				{mark: "b", words: []string{"quota_raw", `"0%" is not a share`, `"1%" to "100%"`}},
				{mark: "c", words: []string{"quota_api", `"150%" is not a share`}},
				{mark: "d", words: []string{"quota_cloud", "1000 is too small", "1MiB"}},
				{mark: "e", words: []string{"quota_reprint", `"lots%" is not a share`}},
				{mark: "f", words: []string{"rate_raw", "must not be negative", "tasks per second the raw door"}},
				{mark: "g", words: []string{"rate_api", "a number"}},
				{mark: "h", words: []string{`unknown key "quota_rw"`, `did you mean "quota_raw"`}},
			}},
		{"bad log", okTop + "[log]\nlevel = \"verbose\" #!a\nmax_size_mb = 0 #!b\nmax_backups = -1 #!c\n" + okPrinter,
			[]wantErr{
				{mark: "a", words: []string{`"verbose" is not a log level`}},
				{mark: "b", words: []string{"max_size_mb", "at least 1"}},
				{mark: "c", words: []string{"max_backups", "negative"}},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const file = "/etc/printgate/printgate.toml"
			cfg, err := Parse(file, []byte(tc.src))
			if cfg != nil {
				t.Errorf("Parse returned a config along with errors")
			}
			checkErrors(t, file, tc.src, err, tc.want)
		})
	}
}

// TestConfigReportsEveryProblem ensures one run reports all mistakes of a
// file, from different tables, in line order.
func TestConfigReportsEveryProblem(t *testing.T) {
	src := `listen = "nowhere" #!listen
[defaults]
timeout = "soon" #!timeout
[[printers]]
name = "kitchen"
url = "tcp//h" #!url
bakup = "bar" #!bakup
[[printers]]
name = "bar"
url = "tcp://h2"
backup = "nobody" #!backup
profile = "tm-t88" #!profile
`
	_, err := Parse("printgate.toml", []byte(src))
	checkErrors(t, "printgate.toml", src, err, []wantErr{
		{line: 1, words: []string{"no api_token"}},
		{mark: "listen", words: []string{"listen"}},
		{mark: "timeout", words: []string{`"soon" is not a duration`}},
		{mark: "url", words: []string{"has no scheme"}},
		{mark: "bakup", words: []string{`"bakup"`}},
		{mark: "backup", words: []string{`"nobody"`}},
		{mark: "profile", words: []string{`"tm-t88"`}},
	})
	if n := strings.Count(err.Error(), "\n") + 1; n != 7 {
		t.Errorf("combined error has %d lines, want one per problem (7):\n%v", n, err)
	}
}

// TestConfigLinesSurviveTrickySyntax ensures line numbers stay right past
// multi-line strings and arrays whose content looks like keys or headers,
// quoted keys, dotted keys and inline printer tables.
func TestConfigLinesSurviveTrickySyntax(t *testing.T) {
	tests := []struct {
		name, src string
		want      []wantErr
	}{
		{"multi-line strings", `api_token = """
[[printers]]
name = "ghost"
"""
data_dir = '''
bakup = 1
'''
[[printers]] #!hdr
name = "p"
url = "tcp://h"
note = "a [[printers]] b = c" #!a
`, []wantErr{{mark: "a", words: []string{`unknown key "note" in [[printers]] "p"`}}}},
		{"multi-line array and comments", okTop + `# [[printers]] in a comment
[[printers]]
name = "p" # backup = "x"
url = "tcp://h"
xs = [ #!a
  "[[printers]]",
  { name = "y" },
]
'quoted key' = 1 #!b
`, []wantErr{
			{mark: "a", words: []string{`unknown key "xs"`}},
			{mark: "b", words: []string{`unknown key "quoted key"`}},
		}},
		{"second entry and subtable", okTop + okPrinter + `[[printers]]
name = "q"
url = "tcp://h2"
[printers.extra] #!a
x = 1
[[printers]]
name = "r"
url = "tcp://h3"
"timeout" = 5 #!b
`, []wantErr{
			{mark: "a", words: []string{`unknown key "extra" in [[printers]] "q"`}},
			{mark: "b", words: []string{`timeout in [[printers]] "r"`}},
		}},
		{"inline printers fall back to the key", okTop + `printers = [ #!a
  { name = "p", url = "tcp://h" },
  { name = "q", url = "nope" },
]
`, []wantErr{{mark: "a", words: []string{`url in [[printers]] "q"`, "no scheme"}}}},
		{"dotted keys", okTop + `cloud.url = "https://x" #!a
cloud.auth_url = "https://x"
` + okPrinter, []wantErr{{mark: "a", words: []string{"url in [cloud]", "ws://"}}}},
		{"windows line endings", strings.ReplaceAll(okTop+"[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\ncolour = 1 #!a\n", "\n", "\r\n"),
			[]wantErr{{mark: "a", words: []string{`unknown key "colour"`}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.toml", []byte(tc.src))
			checkErrors(t, "c.toml", strings.ReplaceAll(tc.src, "\r", ""), err, tc.want)
		})
	}
}

// TestConfigPrinterLine ensures Printer.Line is the entry's header.
func TestConfigPrinterLine(t *testing.T) {
	src := okTop + "\n# kitchen\n[[printers]]\nname = \"k\"\nurl = \"tcp://h1\"\n\n[[printers]]\nname = \"b\"\nurl = \"tcp://h2\"\n"
	cfg, err := Parse("c.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{cfg.Printers[0].Line, cfg.Printers[1].Line}; !slices.Equal(got, []int{4, 8}) {
		t.Errorf("printer lines = %v, want [4 8]", got)
	}
}

// TestConfigTokenNeverPrinted ensures the API token cannot leak through
// formatting, JSON or structured logs of the config.
func TestConfigTokenNeverPrinted(t *testing.T) {
	const token = "tok-9d8e7f6a5b4c3d2e1f0a9b8c"
	cfg, err := Parse("c.toml", []byte("api_token = \""+token+"\"\n"+okPrinter))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIToken.Reveal() != token {
		t.Fatalf("Reveal() = %q, want the token", cfg.APIToken.Reveal())
	}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		outs = append(outs, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, *cfg), fmt.Sprintf(verb, cfg.APIToken))
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&logs, nil), slog.NewJSONHandler(&logs, nil)} {
		slog.New(h).Info("config", "cfg", cfg, "token", cfg.APIToken)
	}
	outs = append(outs, string(js), logs.String())
	for _, out := range outs {
		if strings.Contains(out, token) || strings.Contains(out, fmt.Sprintf("%x", token)) {
			t.Errorf("token leaked: %s", out)
		}
	}
	if !strings.Contains(fmt.Sprintf("%+v", cfg), "APIToken:[redacted]") {
		t.Errorf("%%+v should show the token as [redacted]: %+v", cfg)
	}
}

// TestConfigTokenFile ensures api_token_file is read, trimmed and resolved
// against the config's folder, not the working directory, and that
// unreadable or empty files are reported.
func TestConfigTokenFile(t *testing.T) {
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	secrets := filepath.Join(root, "secrets")
	for _, d := range []string{etc, secrets} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(etc, "token.txt"), "  from-config-dir-0123456789\r\n")
	write(filepath.Join(secrets, "pos"), "from-secrets-0123456789abcd\n")
	write(filepath.Join(etc, "empty"), " \n")
	// A token.txt in the working directory must not be the one read.
	t.Chdir(root)
	write(filepath.Join(root, "token.txt"), "from-working-dir-0123456789")

	load := func(body string) (*Config, error) {
		t.Helper()
		path := filepath.Join(etc, "printgate.toml")
		write(path, body+okPrinter)
		return Load(path)
	}
	for _, tc := range []struct{ file, token, resolved string }{
		{"token.txt", "from-config-dir-0123456789", filepath.Join(etc, "token.txt")},
		{"../secrets/pos", "from-secrets-0123456789abcd", filepath.Join(secrets, "pos")},
		{filepath.Join(secrets, "pos"), "from-secrets-0123456789abcd", filepath.Join(secrets, "pos")},
	} {
		cfg, err := load(fmt.Sprintf("api_token_file = %q\n", tc.file))
		if err != nil {
			t.Fatalf("api_token_file %q: %v", tc.file, err)
		}
		if cfg.APIToken.Reveal() != tc.token || cfg.APITokenFile != tc.resolved {
			t.Errorf("api_token_file %q: token %q from %q, want %q from %q", tc.file, cfg.APIToken.Reveal(), cfg.APITokenFile, tc.token, tc.resolved)
		}
	}

	path := filepath.Join(etc, "printgate.toml")
	src := "api_token_file = \"missing.txt\" #!a\n"
	_, err := load(src)
	checkErrors(t, path, src, err, []wantErr{{mark: "a", words: []string{"cannot read", filepath.Join(etc, "missing.txt")}}})
	src = "api_token_file = \"empty\" #!a\n"
	_, err = load(src)
	checkErrors(t, path, src, err, []wantErr{{mark: "a", words: []string{filepath.Join(etc, "empty"), "is empty"}}})
}

// TestConfigRelativePaths ensures data_dir and log.file written relative
// are taken relative to the config file, and the default log follows
// data_dir.
func TestConfigRelativePaths(t *testing.T) {
	dir := filepath.Join("srv", "store")
	file := filepath.Join(dir, "printgate.toml")
	cfg, err := Parse(file, []byte(okTop+"data_dir = \"state\"\n"+okPrinter))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "state"); cfg.DataDir != want {
		t.Errorf("data_dir = %q, want %q", cfg.DataDir, want)
	}
	if want := filepath.Join(dir, "state", "printgate.log"); cfg.Log.File != want {
		t.Errorf("log file = %q, want %q", cfg.Log.File, want)
	}
	cfg, err = Parse(file, []byte(okTop+"[log]\nfile = \"logs/agent.log\"\n"+okPrinter))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "logs", "agent.log"); cfg.Log.File != want {
		t.Errorf("log file = %q, want %q", cfg.Log.File, want)
	}
}

// TestLoadConfigMissingFile ensures a missing file is an ordinary wrapped
// file error, not a Errors.
func TestLoadConfigMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.toml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	for _, want := range []string{"no config at " + path, "sample", "printgate token", "--config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing-config message lacks %q: %v", want, err)
		}
	}
	var errs Errors
	if errors.As(err, &errs) {
		t.Errorf("a missing file is not a config problem: %v", err)
	}
}

// TestConfigParseDuration ensures durations take Go syntax plus days.
func TestConfigParseDuration(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"1m30s", 90 * time.Second, true},
		{"500ms", 500 * time.Millisecond, true},
		{"7d", 7 * day, true},
		{"1d12h", day + 12*time.Hour, true},
		{"-2d", -2 * day, true},
		{"0", 0, true},
		{"", 0, false},
		{"7", 0, false},
		{"1.5d", 0, false},
		{"d", 0, false},
		{"3d-1h", 0, false},
		{"soon", 0, false},
		{"99999999999d", 0, false},
	} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestConfigParseSize ensures sizes take binary and decimal units.
func TestConfigParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512MiB", 512 << 20, true},
		{"1GiB", 1 << 30, true},
		{"1.5 GiB", 3 << 29, true},
		{"500MB", 500e6, true},
		{"2048", 2048, true},
		{"10kib", 10 << 10, true},
		{"lots", 0, false},
		{"5 parsecs", 0, false},
		{"-1GiB", 0, false},
		{"99999999TiB", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestConfigSuggest ensures typo suggestions find near misses only.
func TestConfigSuggest(t *testing.T) {
	keys := []string{"name", "url", "backup", "timeout", "failover_after", "failback_after"}
	for in, want := range map[string]string{
		"bakup": "backup", "backpu": "backup", "URL": "url", "timout": "timeout",
		"failover_afer": "failover_after", "colour": "", "nmae": "name",
	} {
		if got := suggest(in, keys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDefaultDataDir ensures the default data dir is absolute and, on
// Linux, the FHS location the systemd unit expects.
func TestDefaultDataDir(t *testing.T) {
	d := DefaultDataDir()
	if !filepath.IsAbs(d) {
		t.Errorf("DefaultDataDir() = %q, want an absolute path", d)
	}
	if runtime.GOOS == "linux" && d != "/var/lib/printgate" {
		t.Errorf("DefaultDataDir() = %q on Linux, want /var/lib/printgate", d)
	}
}

// TestProtocolDocConfigLoads ensures the example in docs/PROTOCOL.md §2
// stays a config the agent accepts, so the documentation cannot drift from
// the code.
func TestProtocolDocConfigLoads(t *testing.T) {
	doc, err := os.ReadFile("../../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## 2. Config (TOML)")
	if !ok {
		t.Fatal("docs/PROTOCOL.md has no section 2. Config (TOML)")
	}
	_, block, ok := strings.Cut(sec, "```toml\n")
	if !ok {
		t.Fatal("section 2 has no ```toml example")
	}
	block, _, _ = strings.Cut(block, "```")
	// The documented config names a token file, as a store's would.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "api-token.txt"), []byte("Q7RZKX3M2VDPY4NHTW6BJ5CF\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(filepath.Join(dir, "printgate.toml"), []byte(block))
	if err != nil {
		t.Fatalf("the documented config is rejected:\n%v", err)
	}
	if len(cfg.Printers) != 3 || cfg.Cloud == nil {
		t.Errorf("documented config loaded %d printers, cloud %v; want 3 and a cloud", len(cfg.Printers), cfg.Cloud)
	}
}

// TestConfigTLS ensures the TLS keys are read, resolved and checked: one
// mode at a time, both files or neither, hosts only for a self-signed
// certificate.
func TestConfigTLS(t *testing.T) {
	dir := t.TempDir()
	parse := func(keys string) (*Config, error) {
		return Parse(filepath.Join(dir, "printgate.toml"), []byte(okTop+keys+okPrinter))
	}
	cfg, err := parse("tls = \"self-signed\"\ntls_hosts = [\"pos-pc.local\", \"192.168.1.10\"]\n")
	if err != nil || !cfg.TLS.SelfSigned || !cfg.TLS.On() || !reflect.DeepEqual(cfg.TLS.Hosts, []string{"pos-pc.local", "192.168.1.10"}) {
		t.Errorf("self-signed: %+v %v", cfg, err)
	}
	cfg, err = parse("tls_cert = \"certs/pos.pem\"\ntls_key = \"certs/pos.key\"\n")
	if err != nil || cfg.TLS.Cert != filepath.Join(dir, "certs/pos.pem") || cfg.TLS.Key != filepath.Join(dir, "certs/pos.key") || !cfg.TLS.On() {
		t.Errorf("cert files: %+v %v", cfg.TLS, err)
	}
	if cfg, err := parse(""); err != nil || cfg.TLS.On() {
		t.Errorf("default: %+v %v, want TLS off", cfg, err)
	}
	for _, tc := range []struct{ keys, want string }{
		{"tls = \"on\"\n", `"on" is not a TLS mode`},
		{"tls_cert = \"a.pem\"\n", "needs tls_key"},
		{"tls_key = \"a.key\"\n", "needs tls_cert"},
		{"tls = \"self-signed\"\ntls_cert = \"a.pem\"\ntls_key = \"a.key\"\n", "use one or the other"},
		{"tls_hosts = [\"x\"]\n", "only applies with tls"},
		{"tls = \"self-signed\"\ntls_hosts = \"x\"\n", "must be a list"},
	} {
		if _, err := parse(tc.keys); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error saying %q", tc.keys, err, tc.want)
		}
	}
}

// TestConfigAllowedHosts ensures allowed_hosts is read as the Host check
// compares it (lower case, no trailing dot, addresses in their plain form,
// each once), and that an entry that could never match a Host header (a
// URL, a port, a wildcard) is refused with what to write instead.
func TestConfigAllowedHosts(t *testing.T) {
	dir := t.TempDir()
	parse := func(keys string) (*Config, error) {
		return Parse(filepath.Join(dir, "printgate.toml"), []byte(okTop+keys+okPrinter))
	}
	cfg, err := parse("allowed_hosts = [\"POS.local.\", \"pos.local\", \"192.168.1.10\", \"[fe80::1]\", \"::ffff:10.0.0.1\"]\n")
	if err != nil || !reflect.DeepEqual(cfg.AllowedHosts, []string{"pos.local", "192.168.1.10", "fe80::1", "10.0.0.1"}) {
		t.Errorf("allowed_hosts: %q %v", cfg.AllowedHosts, err)
	}
	if cfg, err := parse(""); err != nil || cfg.AllowedHosts != nil {
		t.Errorf("default: %q %v, want none", cfg.AllowedHosts, err)
	}
	for _, tc := range []struct{ keys, want string }{
		{"allowed_hosts = \"pos.local\"\n", "must be a list"},
		{"allowed_hosts = [1]\n", "must be a list of host names in quotes"},
		{"allowed_hosts = [\"\"]\n", "empty name"},
		{"allowed_hosts = [\"http://pos.local:8631/\"]\n", `is a URL: list the host name only, such as "pos.local"`},
		{"allowed_hosts = [\"pos.local:8631\"]\n", "has a port (8631)"},
		{"allowed_hosts = [\"*.local\"]\n", "has a wildcard"},
		{"allowed_hosts = [\"pos local\"]\n", "is not a host name"},
	} {
		if _, err := parse(tc.keys); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "allowed_hosts") {
			t.Errorf("%q: %v, want an error on allowed_hosts saying %q", tc.keys, err, tc.want)
		}
	}
}

// TestConfigWithoutPrinters ensures a config with no printer yet (a fresh
// install that found none) is valid: the agent starts and serves its page,
// where a manager adds the first one.
func TestConfigWithoutPrinters(t *testing.T) {
	for _, src := range []string{okTop, okTop + "printers = []\n"} {
		cfg, err := Parse("printgate.toml", []byte(src))
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if len(cfg.Printers) != 0 {
			t.Errorf("%q: %d printers", src, len(cfg.Printers))
		}
	}
}

// TestTokenFileBounded ensures api_token_file must be a small regular file:
// a config naming a device or a huge file is refused with a message
// instead of hanging the agent or filling its memory at start.
func TestTokenFileBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), 5<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{big: "larger than", dir: "not a regular file"} {
		_, err := Parse(filepath.Join(dir, "printgate.toml"), []byte(fmt.Sprintf("api_token_file = %q\n", file)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("api_token_file %s: %v, want %q", file, err, want)
		}
	}
}

// TestConfigAckTimeout ensures [cloud] ack_timeout is read,
// defaults to 30 s, and must be longer than zero.
func TestConfigAckTimeout(t *testing.T) {
	cloud := "[cloud]\nurl = \"wss://h/a\"\nauth_url = \"https://h/o\"\n"
	cfg, err := Parse("/etc/printgate/printgate.toml", []byte(okTop+cloud+okPrinter))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cloud.AckTimeout != 30*time.Second {
		t.Errorf("default ack_timeout %v, want 30s", cfg.Cloud.AckTimeout)
	}
	cfg, err = Parse("/etc/printgate/printgate.toml", []byte(okTop+cloud+"ack_timeout = \"2m\"\n"+okPrinter))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cloud.AckTimeout != 2*time.Minute {
		t.Errorf("ack_timeout %v, want 2m", cfg.Cloud.AckTimeout)
	}
	src := okTop + cloud + "ack_timeout = \"0s\" #!a\n" + okPrinter
	_, err = Parse("/etc/printgate/printgate.toml", []byte(src))
	checkErrors(t, "/etc/printgate/printgate.toml", src, err, []wantErr{{mark: "a", words: []string{"ack_timeout", "longer than zero"}}})
}

// TestConfigCancelTasks ensures [cloud] cancel_tasks is read: by default a
// cloud cancel reaches only cloud tasks; "any" lets it reach every task;
// anything else is refused, naming both values.
func TestConfigCancelTasks(t *testing.T) {
	cloud := "[cloud]\nurl = \"wss://h/a\"\nauth_url = \"https://h/o\"\n"
	for _, c := range []struct {
		line string
		any  bool
	}{{"", false}, {"cancel_tasks = \"cloud\"\n", false}, {"cancel_tasks = \"any\"\n", true}} {
		cfg, err := Parse("/etc/printgate/printgate.toml", []byte(okTop+cloud+c.line+okPrinter))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Cloud.CancelAny != c.any {
			t.Errorf("%q: CancelAny %v, want %v", c.line, cfg.Cloud.CancelAny, c.any)
		}
	}
	src := okTop + cloud + "cancel_tasks = \"all\" #!a\n" + okPrinter
	_, err := Parse("/etc/printgate/printgate.toml", []byte(src))
	checkErrors(t, "/etc/printgate/printgate.toml", src, err, []wantErr{{mark: "a", words: []string{"cancel_tasks", `"cloud"`, `"any"`}}})
}

// TestConfigClearCloudToLoopback: a clear cloud address (ws://, http://)
// is refused across the network but stays valid to this machine, where the
// demo and the tests run the reference cloud.
func TestConfigClearCloudToLoopback(t *testing.T) {
	for _, host := range []string{"127.0.0.1:9000", "localhost:9000", "[::1]:9000"} {
		src := okTop + "[cloud]\nurl = \"ws://" + host + "/agent\"\nauth_url = \"http://" + host + "/oauth\"\n" + okPrinter
		if _, err := Parse("c.toml", []byte(src)); err != nil {
			t.Errorf("clear cloud to %s refused: %v", host, err)
		}
	}
}

// TestWhere ensures Where names a key's own line, as the config errors do,
// and the file alone for a key left to its default.
func TestWhere(t *testing.T) {
	src := "# x\nlisten = \"127.0.0.1:8631\"\napi_token = \"where-test-token-0123456789\"\n\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9100\"\n"
	path := filepath.Join(t.TempDir(), "printgate.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"listen":   path + ":2",
		"data_dir": path,
	} {
		if got := cfg.Where(key); got != want {
			t.Errorf("Where(%q) = %q, want %q", key, got, want)
		}
	}
	if p := cfg.Printers[0]; p.Line != 5 || p.URLLine != 7 {
		t.Errorf("printer lines %d (header), %d (url); want 5, 7", p.Line, p.URLLine)
	}
}
