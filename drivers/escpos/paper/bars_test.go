package paper

import (
	"strings"
	"testing"
)

// TestCode128Table checks the pattern table against the symbology's
// invariants, which a mistyped entry breaks: every symbol is 11 modules
// (the stop 13) of 3 bars and 3 spaces 1..4 wide, its bars add up to an
// even number of modules, and no two symbols are alike.
func TestCode128Table(t *testing.T) {
	seen := map[string]int{}
	for v, p := range code128Patterns {
		sum, bars := 0, 0
		for i := 0; i < len(p); i++ {
			w := int(p[i] - '0')
			if w < 1 || w > 4 {
				t.Errorf("symbol %d: width %d", v, w)
			}
			sum += w
			if i%2 == 0 {
				bars += w
			}
		}
		want := 11
		if v == 106 {
			want = 13
		}
		if sum != want || (v != 106 && (len(p) != 6 || bars%2 != 0)) {
			t.Errorf("symbol %d %q: %d modules, bars %d", v, p, sum, bars)
		}
		if w, ok := seen[p]; ok {
			t.Errorf("symbols %d and %d alike", w, v)
		}
		seen[p] = v
	}
}

// TestCode128Symbols checks code sets, the check symbol and the scanned
// text against values worked out by hand.
func TestCode128Symbols(t *testing.T) {
	for _, c := range []struct {
		payload string
		syms    []int
		text    string
	}{
		// Start B 104, A 33, B 34, check (104+33+2*34)%103 = 102, stop.
		{"{BAB", []int{104, 33, 34, 102, 106}, "AB"},
		// No code set named: read as B, as printers do not.
		{"AB", []int{104, 33, 34, 102, 106}, "AB"},
		// Start C, 12, 34, to B, 'x' (88): (105+12+68+3*100+4*88)%103.
		{"{C\x0c\x22{Bx", []int{105, 12, 34, 100, 88, (105 + 12 + 68 + 300 + 352) % 103, 106}, "1234x"},
		{"{B{{", []int{104, 91, (104 + 91) % 103, 106}, "{"},
	} {
		syms, text, err := Code128Symbols([]byte(c.payload))
		if err != nil || text != c.text || len(syms) != len(c.syms) {
			t.Errorf("%q: %v %q %v", c.payload, syms, text, err)
			continue
		}
		for i := range syms {
			if syms[i] != c.syms[i] {
				t.Errorf("%q: symbols %v, want %v", c.payload, syms, c.syms)
				break
			}
		}
	}
	for _, bad := range []string{"", "{C\x64", "{B\x01", "{Cx"} {
		if _, _, err := Code128Symbols([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestEAN13 draws the EAN-13 of a real product code (4006381333931) and
// checks its check digit, guards and that each digit half reads back.
func TestEAN13(t *testing.T) {
	m, text, err := Bars(SymEAN13, []byte("400638133393"))
	if err != nil || text != "4006381333931" {
		t.Fatalf("%q %v", text, err)
	}
	s := modString(m)
	if len(s) != 95 || s[:3] != "101" || s[45:50] != "01010" || s[92:] != "101" {
		t.Fatalf("structure %s", s)
	}
	// Right-hand digits (3,3,3,9,3,1) are the complements of set A.
	right := ""
	for i := 0; i < 6; i++ {
		pat := complement(s[50+7*i : 57+7*i])
		right += string(rune('0' + indexOf(eanL[:], pat)))
	}
	if right != "333931" {
		t.Errorf("right half reads %q", right)
	}
	if _, _, err := Bars(SymEAN13, []byte("4006381333932")); err == nil {
		t.Error("wrong check digit accepted")
	}
}

// TestITF checks Interleaved 2 of 5's start, stop and width.
func TestITF(t *testing.T) {
	m, _, err := Bars(SymITF, []byte("12"))
	if err != nil {
		t.Fatal(err)
	}
	s := modString(m)
	// start 1010, digits 1 (bars WNNNW) and 2 (spaces NWNNW), stop WNN.
	want := "1010" + "111" + "0" + "1" + "000" + "1" + "0" + "1" + "0" + "111" + "000" + "11101"
	if s != want {
		t.Errorf("ITF 12:\n%s\nwant\n%s", s, want)
	}
	if !strings.HasPrefix(SymbologyName(SymCODE39), "CODE39") {
		t.Error("name")
	}
	if _, _, err := Bars(SymCODE39, []byte("A")); err == nil {
		t.Error("CODE39 bars are not drawn; Bars must say so")
	}
}

func indexOf(a []string, s string) int {
	for i, x := range a {
		if x == s {
			return i
		}
	}
	return -100
}

func modString(m []bool) string {
	var sb strings.Builder
	for _, b := range m {
		if b {
			sb.WriteByte('1')
		} else {
			sb.WriteByte('0')
		}
	}
	return sb.String()
}
