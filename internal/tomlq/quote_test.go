package tomlq_test

import (
	"testing"

	"github.com/BurntSushi/toml"

	"printgate/internal/tomlq"
)

// TestQuote ensures Quote's escapes are the ones the config lines have
// always had: quotes and backslashes by a backslash, control characters
// as \uXXXX, everything else as it is.
func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		``:                  `""`,
		`kitchen`:           `"kitchen"`,
		`C:\a "b"` + "\n":   `"C:\\a \"b\"\u000A"`,
		"tab\there\x7f":     `"tab\u0009here\u007F"`,
		`厨房 it's`:           `"厨房 it's"`,
		`tcp://10.0.0.5:91`: `"tcp://10.0.0.5:91"`,
	} {
		if got := tomlq.Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestQuoteReadsBack ensures what Quote writes a TOML parser reads back
// as the same string, whatever it holds.
func TestQuoteReadsBack(t *testing.T) {
	for _, s := range []string{``, `plain`, `C:\x`, `it's`, "two\nlines\r\n", `a"b\c'`, "\x00\x1b\x7f", "桌 12 <A&B>"} {
		var v struct{ K string }
		if _, err := toml.Decode("K = "+tomlq.Quote(s)+"\n", &v); err != nil || v.K != s {
			t.Errorf("%q written as %s reads back %q, %v", s, tomlq.Quote(s), v.K, err)
		}
	}
}
