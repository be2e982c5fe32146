package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"printgate/agent/config"
	"printgate/spool"
)

// fuzzToken is the token in the fuzz directory's api-token.txt.
const fuzzToken = "fuzz-token-0123456789abcdefghij"

// FuzzParse feeds arbitrary text to Parse as the file printgate.toml in a
// folder that also holds api-token.txt, and checks what the agent and the
// person editing the file rely on:
//   - Parse never panics and never both accepts and complains;
//   - a refusal is Errors, every problem naming the file, a line within it
//     (1 to its last non-empty line) and a message, in line order;
//   - an accepted config is sound: a token of at least MinTokenLength
//     that no formatting prints, printers with valid, unique names, header
//     lines within the file and backups that are other printers;
//   - parsing the same text again gives the same config;
//   - the block AppendPrinter (the manager page's "add to config") adds
//     after an accepted file gives one more printer whenever the result is
//     still TOML, leaving every other setting as it was.
func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "api-token.txt"), []byte(fuzzToken+"\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "printgate.toml")
	if sample, err := os.ReadFile("../../testdata/config/printgate.toml"); err == nil {
		f.Add(sample)
	} else {
		f.Fatal(err)
	}
	const top = "api_token = \"tok-0123456789abcdef01234\"\n"
	const prn = "[[printers]]\nname = \"p\"\nurl = \"tcp://10.9.9.9\"\n"
	for _, s := range []string{
		top + prn,
		top,
		top + "printers = []\n",
		"api_token_file = \"api-token.txt\"\n" + prn + "[[printers]]\nname = \"q\"\nurl = \"serial:///dev/ttyUSB0?baud=19200\"\nbackup = \"p\"\nprofile = \"xprinter-58\"\n",
		top + "[defaults]\ntimeout = \"2m\"\nretry_factor = 1.5\n[spool]\nmax_size = \"64MiB\"\nretention = \"3d\"\n" + prn,
		top + "[cloud]\nurl = \"wss://x/agent\"\nauth_url = \"https://x/oauth\"\n" + prn + "timeout = 5\n",
		"api_token = \"\"\"\n[[printers]]\nname = \"ghost\"\n\"\"\"\n" + prn + "note = \"a [[printers]] b = c\"\n",
		top + "printers = [\n  { name = \"p\", url = \"tcp://h\" },\n  { name = \"q\", url = \"nope\" },\n]\n",
		top + "cloud.url = \"https://x\"\n" + prn + "[printers.extra]\nx = 1\n",
		strings.ReplaceAll(top+prn+"colour = 1\n", "\n", "\r\n"),
		top + prn + "[[printers]]\nname = \"p\"\nurl = \"tcp://10.9.9.9:9100\"\nbackup = \"p\"\n",
		"api_token = \"short\"\nlisten = \":99999\"\n[log]\nlevel = \"loud\"\n",
		"api_token = \"unterminated\n",
		"\ufeff" + top + "# comment at the end without a newline",
		top + "[[printers]]\nname = \"p\"\nurl = \"tcp://h\"\ndots = 384\ncolumns = 32\nencoding = \"gb18030\"\n",
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		if readsOutside(data, dir) {
			t.Skip("api_token_file names a file outside the fuzz folder")
		}
		cfg, err := config.Parse(path, data)
		// The file's lines, not counting the empty ones it ends with: a
		// problem "at line 12" of an 11-line file points at nothing.
		lines := max(1, strings.Count(strings.TrimRight(string(data), "\r\n"), "\n")+1)
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned a config and an error: %v", err)
			}
			var es config.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %v (%T) is not a non-empty config.Errors", err, err)
			}
			for i, e := range es {
				if e.File != path || e.Msg == "" || e.Line < 1 || e.Line > lines {
					t.Fatalf("problem %q names %s line %d; the file is %s, %d lines", e.Msg, e.File, e.Line, path, lines)
				}
				if i > 0 && e.Line < es[i-1].Line {
					t.Fatalf("problems out of line order: %v", es)
				}
			}
			return
		}
		if cfg == nil {
			t.Fatal("Parse returned neither a config nor an error")
		}
		checkConfig(t, cfg, lines)

		again, err := config.Parse(path, data)
		if err != nil || !reflect.DeepEqual(cfg, again) {
			t.Fatalf("parsing the same text again gave another result (%v):\n%+v\n%+v", err, cfg, again)
		}

		const name, url = "fuzz-added-printer", "tcp://fuzz-added.invalid:9100"
		if _, taken := cfg.Printer(name); taken || strings.Contains(string(data), "fuzz-added.invalid") {
			return
		}
		// The text AppendPrinter writes, parsed here rather than through
		// AppendPrinter itself: its fsyncs would make the fuzzer (and
		// its minimizer, which reruns an input thousands of times) crawl.
		joined := string(data)
		if len(data) > 0 && !strings.HasSuffix(joined, "\n") {
			joined += "\n"
		}
		joined += "\n" + config.PrinterBlock(name, url)
		added, err := config.Parse(path, []byte(joined))
		if err != nil {
			var raw map[string]any
			if _, terr := toml.Decode(joined, &raw); terr != nil {
				return // TOML itself forbids it, e.g. printers = [] then [[printers]]
			}
			t.Fatalf("appending a fresh printer to an accepted config failed: %v", err)
		}
		n := len(cfg.Printers)
		if len(added.Printers) != n+1 || added.Printers[n].Name != name || added.Printers[n].URL != url {
			t.Fatalf("with the appended block: %d printers (was %d), last %+v", len(added.Printers), n, added.Printers[len(added.Printers)-1])
		}
		if n > 0 && !reflect.DeepEqual(added.Printers[:n], cfg.Printers) {
			t.Fatalf("the appended block changed the printers already there:\n%+v\n%+v", cfg.Printers, added.Printers[:n])
		}
		rest, restAdded := *cfg, *added
		rest.Printers, restAdded.Printers = nil, nil
		if !reflect.DeepEqual(rest, restAdded) {
			t.Fatalf("the appended block changed other settings:\n%+v\n%+v", rest, restAdded)
		}
	})
}

// checkConfig asserts the soundness of an accepted config of lines lines.
func checkConfig(t *testing.T, cfg *config.Config, lines int) {
	t.Helper()
	tok := cfg.APIToken.Reveal()
	if len(tok) < config.MinTokenLength || strings.TrimSpace(tok) != tok {
		t.Fatalf("accepted token %q", tok)
	}
	for _, out := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", *cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(out, tok) {
			t.Fatalf("the token shows in the config's formatting: %s", out)
		}
	}
	var names []string
	for _, p := range cfg.Printers {
		if err := spool.ValidPrinterName(p.Name); err != nil {
			t.Fatalf("accepted printer: %v", err)
		}
		if slices.Contains(names, p.Name) {
			t.Fatalf("two printers are called %q", p.Name)
		}
		names = append(names, p.Name)
		if p.Line < 1 || p.Line > lines {
			t.Fatalf("printer %q is at line %d of %d", p.Name, p.Line, lines)
		}
		if p.Target.Scheme == "" || p.Profile.Columns <= 0 {
			t.Fatalf("printer %q has target %+v, %d columns", p.Name, p.Target, p.Profile.Columns)
		}
	}
	for _, p := range cfg.Printers {
		if p.Backup != "" && (p.Backup == p.Name || !slices.Contains(names, p.Backup)) {
			t.Fatalf("printer %q has backup %q; printers are %v", p.Name, p.Backup, names)
		}
	}
}

// readsOutside reports whether data, as TOML, names an api_token_file
// outside dir: Parse would read it, and a fuzzer that wrote "/dev/zero"
// or "/dev/stdin" would test the machine, not the parser.
func readsOutside(data []byte, dir string) bool {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return false
	}
	s, ok := raw["api_token_file"].(string)
	if !ok {
		return false
	}
	p := s
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// TestSyntaxErrorLine is the regression test for the first FuzzParse
// finding (testdata/fuzz/FuzzParse/656b27c544cd3140): the TOML parser
// numbers the line of a string left open before a CRLF line end one short,
// so a file saved on Windows with a missing closing quote on its first
// line got a message without a line (line 0), and on line 5 one naming
// line 4. A syntax error at the very end named the line after the last.
func TestSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
	}{
		{"\"\r\n0", 1},
		{"api_token = \"unterminated\r\n", 1},
		{"listen = \":8631\"\r\n\r\n\r\n\r\napi_token = \"x\r\n[[printers]]\r\n", 5},
		{"listen = \":8631\"\napi_token = \"x\n", 2},
		{"[printers\n", 1},
		{"a = 1\n[[printers]]\nname = \n", 3},
		{"\x02", 1}, // no offset (-1): f1c8c1534d751e6b, a panic in the first fix
	} {
		_, err := config.Parse("c.toml", []byte(tc.src))
		var es config.Errors
		if !errors.As(err, &es) || len(es) != 1 {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if es[0].Line != tc.line || !strings.Contains(es[0].Msg, "not valid TOML") {
			t.Errorf("%q: %v, want line %d", tc.src, es[0], tc.line)
		}
	}
}

// TestImpliedTableLine is the regression test for the second FuzzParse
// finding (testdata/fuzz/FuzzParse/b64252c978f419f5): a table defined only
// by a dotted header, like "printers" by [printers.kitchen] (a likely
// mistake for [[printers]]), had no line, so the problem reported about it
// named none.
func TestImpliedTableLine(t *testing.T) {
	const top = "api_token = \"tok-0123456789abcdef01234\"\n\n"
	for _, tc := range []struct {
		src, words string
		line       int
	}{
		{top + "[printers.kitchen]\nname = \"k\"\nurl = \"tcp://h\"\n", "write [[printers]]", 3},
		{"[[p.000000]]#000000000000000000", `unknown key "p"`, 1},
		{top + "# the cloud\n[cloud.extra.deeper]\nx = 1\n", "cloud", 4},
	} {
		_, err := config.Parse("c.toml", []byte(tc.src))
		var es config.Errors
		if !errors.As(err, &es) {
			t.Fatalf("%q: %v", tc.src, err)
		}
		found := false
		for _, e := range es {
			if strings.Contains(e.Msg, tc.words) {
				found = true
				if e.Line != tc.line {
					t.Errorf("%q: %v, want line %d", tc.src, e, tc.line)
				}
			}
		}
		if !found {
			t.Errorf("%q: no problem mentions %q: %v", tc.src, tc.words, err)
		}
	}
}
