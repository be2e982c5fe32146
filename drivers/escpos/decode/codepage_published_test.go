package decode

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The published mapping the ESC t tables are checked against is
// testdata/codepages: the numbering of each maker and the tables of the
// npm codepage-encoder, written by scripts/gen-escpos-corpus/codepages.mjs
// (versions in testdata/codepages/VERSION). It is a second source for every
// table: golang.org/x/text's charmaps, the glibc charmaps behind
// tables_gen.go and libiconv's CP853 are the first.

// unsupportedTables are tables a numbering selects that the decoder does
// not have (they print as PC437); each needs a table from a source other
// than the one it is checked against.
var unsupportedTables = map[string]string{
	"cp720":           "Arabic: no glibc or x/text table",
	"cp864":           "Arabic with contextual forms: glibc's IBM864 disagrees with printers on the shaped letters",
	"cp1098":          "Farsi: no table",
	"rk1048":          "Kazakh: no table",
	"thai11":          "Thai printer tables: no published mapping but the encoder's",
	"thai13":          "Thai printer tables: no published mapping but the encoder's",
	"thai42":          "Thai printer tables: no published mapping but the encoder's",
	"tcvn3":           "Vietnamese TCVN-3 printer tables: no table",
	"tcvn3capitals":   "Vietnamese TCVN-3 printer tables: no table",
	"cp3012":          "Xprinter Cyrillic variant: no table",
	"latvian":         "Xprinter Latvian: no table",
	"xprinter/hebrew": "Xprinter Hebrew: no table",
	// The two sources disagree on a few bytes, and there is no third
	// here to settle them; a wrong letter is worse than a visible PC437
	// fallback.
	"cp774":  "glibc CP774 and codepage-encoder disagree at 0xE1, 0xEF, 0xFA",
	"cp851":  "glibc IBM851 and codepage-encoder disagree at 0xB7, 0xB8, 0xF7",
	"cp1125": "glibc CP1125 and codepage-encoder disagree at 0xFA, 0xFB",
}

// knownDifferences are bytes where the decoder knowingly differs from the
// published table, with the reason.
var knownDifferences = map[string]map[byte]string{
	// Unicode's mapping (x/text) added U+05BA at 0xCA in 2006; the encoder's
	// table predates it.
	"windows1255": {0xCA: "HEBREW POINT HOLAM HASER FOR VAV"},
}

// undefinedHere are bytes the decoder leaves undefined (U+FFFD) where the
// published table has an approximation only it makes, per table: the
// ranges, and why.
var undefinedHere = map[string]struct {
	ranges [][2]byte
	why    string
}{
	"epson/katakana":  {[][2]byte{{0x80, 0xA0}, {0xE0, 0xFF}}, "Epson's katakana block graphics have no one-for-one Unicode characters"},
	"epson/iso8859-2": {[][2]byte{{0x80, 0x9F}}, "Epson's graphics in the C1 range; 0xA0..0xFF is ISO 8859-2"},
}

// printerAdditions are bytes a printer table defines where the first
// source leaves them undefined: the euro sign printers added to the upper
// half of older DOS pages. Ours must have them as published.
var printerAdditions = map[string][]byte{
	"cp857": {0xD5},
}

func undefinedByte(name string, b byte) bool {
	for _, r := range undefinedHere[name].ranges {
		if b >= r[0] && b <= r[1] {
			return true
		}
	}
	return false
}

func readTable(t *testing.T, name string) [128]rune {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "codepages", strings.ReplaceAll(name, "/", "_")+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [128]rune
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		var b, u string
		if _, err := fmt.Sscan(line, &b, &u); err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		bv, err := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 8)
		if err != nil || bv < 0x80 {
			t.Fatalf("%s: %q: bad byte", name, line)
		}
		r := rune(0xFFFD)
		if u != "-" {
			uv, err := strconv.ParseUint(strings.TrimPrefix(u, "U+"), 16, 32)
			if err != nil {
				t.Fatalf("%s: %q: bad code point", name, line)
			}
			r = rune(uv)
		}
		out[bv-0x80] = r
		n++
	}
	if n != 128 {
		t.Fatalf("%s: %d bytes, want 128", name, n)
	}
	return out
}

// TestCodePagesPublished checks each maker's ESC t numbering, and every
// table it selects byte by byte, against the published mapping.
func TestCodePagesPublished(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "codepages", "numbering.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[CodeTables]map[byte]bool{}
	checked := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		var vendor, name string
		var n byte
		if _, err := fmt.Sscan(line, &vendor, &n, &name); err != nil {
			t.Fatalf("numbering %q: %v", line, err)
		}
		ct := CodeTables(vendor)
		if seen[ct] == nil {
			seen[ct] = map[byte]bool{}
		}
		seen[ct][n] = true
		ours, ok := numberings[ct][n]
		if why, unsupported := unsupportedTables[name]; unsupported {
			if ok {
				t.Errorf("%s ESC t %d (%s) has a table now; take %s off unsupportedTables (%s)", vendor, n, name, name, why)
			}
			continue
		}
		if !ok {
			t.Errorf("%s ESC t %d selects %s, which the decoder does not have", vendor, n, name)
			continue
		}
		want := readTable(t, name)
		add := printerAdditions[name]
		for i, w := range want {
			b := byte(0x80 + i)
			got := ours.DecodeByte(b)
			if got == w {
				continue
			}
			switch {
			case got == 0xFFFD && containsByte(add, b):
				// a printer's addition: the published table is right
				// and ours must have it
				t.Errorf("%s ESC t %d (%s) byte %#x: undefined here, the printer prints %U", vendor, n, name, b, w)
			case knownDifferences[name][b] != "":
			case got == 0xFFFD && undefinedByte(name, b):
			case got == 0xFFFD && w == rune(b):
				// The published tables fill bytes their page leaves
				// undefined with the Latin-1 code point of the byte
				// (C1 controls, ISO 8859-7 0xAE): nothing to print.
			default:
				t.Errorf("%s ESC t %d (%s) byte %#x: %U, published %U", vendor, n, name, b, got, w)
			}
		}
		checked++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Every number the decoder maps must be in the published numbering.
	for ct, m := range numberings {
		for n := range m {
			if !seen[ct][n] {
				t.Errorf("%s ESC t %d has a table here but none in the published numbering", ct, n)
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d tables, want the 40-odd of both numberings", checked)
	}
}

func containsByte(s []byte, b byte) bool {
	for _, c := range s {
		if c == b {
			return true
		}
	}
	return false
}
