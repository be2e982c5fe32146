package paper

import (
	"fmt"
	"strings"
)

// GS k symbology numbers (function B; function A's 0..6 are mapped onto
// these by BarcodeSymbology). The paper package uses the printer's numbering
// so that both the document renderer and the stream decoder can hand it what
// they have without a translation table of their own.
const (
	SymUPCA    byte = 65
	SymUPCE    byte = 66
	SymEAN13   byte = 67
	SymEAN8    byte = 68
	SymCODE39  byte = 69
	SymITF     byte = 70
	SymCODABAR byte = 71
	SymCODE93  byte = 72
	SymCODE128 byte = 73
)

// BarcodeSymbology maps GS k m, in either numbering (function A 0..6 with
// NUL-terminated data, function B 65..73 with a length byte), to function B.
func BarcodeSymbology(m byte) byte {
	if m <= 6 {
		return m + 65
	}
	return m
}

// SymbologyName is the document spelling of a GS k symbology (CODE128 ...).
func SymbologyName(sym byte) string {
	switch sym {
	case SymUPCA:
		return "UPCA"
	case SymUPCE:
		return "UPCE"
	case SymEAN13:
		return "EAN13"
	case SymEAN8:
		return "EAN8"
	case SymCODE39:
		return "CODE39"
	case SymITF:
		return "ITF"
	case SymCODABAR:
		return "CODABAR"
	case SymCODE93:
		return "CODE93"
	case SymCODE128:
		return "CODE128"
	}
	return fmt.Sprintf("GS k %d", sym)
}

// Bars returns the modules of the barcode a printer draws for GS k sym
// payload, true for a black module, without quiet zones, and the text a
// scanner reads from it (what the printer prints under it as HRI). wide is
// the width of a wide element in modules for the two-width symbologies
// (ITF); printers use 2..3, the renderer's width estimate assumes 3.
//
// It works from the payload bytes the printer receives, not from the
// document's text, so that the picture shows the code sets the encoder
// really chose. CODE39, CODABAR, CODE93 and UPC-E are not drawn: they return
// an error, and the caller shows a marker instead.
func Bars(sym byte, payload []byte) (modules []bool, text string, err error) {
	switch sym {
	case SymCODE128:
		return code128Bars(payload)
	case SymEAN13:
		return eanBars(payload, 12)
	case SymUPCA:
		d, text, err := digitsCheck(payload, 11)
		if err != nil {
			return nil, "", err
		}
		m, _, err := eanBars([]byte("0"+d), 12)
		return m, text, err
	case SymEAN8:
		return eanBars(payload, 7)
	case SymITF:
		return itfBars(payload)
	}
	return nil, "", fmt.Errorf("%s bars are not drawn", SymbologyName(sym))
}

// code128Patterns are the element widths (bar, space, bar, ...) of the 107
// CODE128 symbols (ISO/IEC 15417 table 1), indexed by symbol value; 106 is
// the stop pattern with its final bar.
var code128Patterns = [107]string{
	"212222", "222122", "222221", "121223", "121322", "131222", "122213", "122312", "132212", "221213",
	"221312", "231212", "112232", "122132", "122231", "113222", "123122", "123221", "223211", "221132",
	"221231", "213212", "223112", "312131", "311222", "321122", "321221", "312212", "322112", "322211",
	"212123", "212321", "232121", "111323", "131123", "131321", "112313", "132113", "132311", "211313",
	"231113", "231311", "112133", "112331", "132131", "113123", "113321", "133121", "313121", "211331",
	"231131", "213113", "213311", "213131", "311123", "311321", "331121", "312113", "312311", "332111",
	"314111", "221411", "431111", "111224", "111422", "121124", "121421", "141122", "141221", "112214",
	"112412", "122114", "122411", "142112", "142211", "241211", "221114", "413111", "241112", "134111",
	"111242", "121142", "121241", "114212", "124112", "124211", "411212", "421112", "421211", "212141",
	"214121", "412121", "111143", "111341", "131141", "114113", "114311", "411113", "411311", "113141",
	"114131", "311141", "411131", "211412", "211214", "211232", "2331112",
}

// Code128Symbols turns a GS k 73 payload into CODE128 symbol values: start,
// data, check and stop. The payload names its code sets as the printer
// expects: "{A", "{B", "{C" switch (the first must open the data; a payload
// without one is read as code set B), "{1".."{4" are FNC1..FNC4, "{S" is
// SHIFT and "{{" a brace. It also returns the text a scanner reads.
func Code128Symbols(payload []byte) (symbols []int, text string, err error) {
	if len(payload) == 0 {
		return nil, "", fmt.Errorf("CODE128 payload is empty")
	}
	var sb strings.Builder
	set := byte('B')
	i := 0
	if len(payload) >= 2 && payload[0] == '{' && strings.IndexByte("ABC", payload[1]) >= 0 {
		set = payload[1]
		i = 2
	}
	symbols = append(symbols, 103+int(set-'A'))
	shift := false
	for i < len(payload) {
		c := payload[i]
		if c == '{' && i+1 < len(payload) {
			n := payload[i+1]
			i += 2
			switch n {
			case 'A', 'B', 'C':
				if n != set {
					// CODE A is 101, CODE B 100 and CODE C 99 in every set.
					symbols = append(symbols, 101-int(n-'A'))
					set = n
				}
			case '1':
				symbols = append(symbols, 102)
			case '2', '3', '4', 'S':
				if set == 'C' {
					return nil, "", fmt.Errorf("CODE128 payload: %q in code set C", "{"+string(n))
				}
				switch n {
				case '2':
					symbols = append(symbols, 97)
				case '3':
					symbols = append(symbols, 96)
				case '4':
					// FNC4 shares its value with the switch to the set in use.
					symbols = append(symbols, 101-int(set-'A'))
				case 'S':
					symbols = append(symbols, 98)
					shift = true
					continue
				}
			case '{':
				v, ok := code128Value(set, '{')
				if !ok {
					return nil, "", fmt.Errorf("CODE128 payload: '{' not in code set %c", set)
				}
				symbols = append(symbols, v)
				sb.WriteByte('{')
			default:
				return nil, "", fmt.Errorf("CODE128 payload: unknown code %q", "{"+string(n))
			}
			shift = false
			continue
		}
		i++
		cur := set
		if shift {
			cur = 'A' + 'B' - set
			shift = false
		}
		if cur == 'C' {
			if c > 99 {
				return nil, "", fmt.Errorf("CODE128 payload: byte %d in code set C", c)
			}
			symbols = append(symbols, int(c))
			sb.WriteByte('0' + c/10)
			sb.WriteByte('0' + c%10)
			continue
		}
		v, ok := code128Value(cur, c)
		if !ok {
			return nil, "", fmt.Errorf("CODE128 payload: byte %#x not in code set %c", c, cur)
		}
		symbols = append(symbols, v)
		sb.WriteByte(c)
	}
	sum := symbols[0]
	for k := 1; k < len(symbols); k++ {
		sum += k * symbols[k]
	}
	symbols = append(symbols, sum%103, 106)
	return symbols, sb.String(), nil
}

// code128Value is the symbol value of character c in code set A or B.
func code128Value(set, c byte) (int, bool) {
	switch {
	case set == 'A' && c < 0x20:
		return int(c) + 64, true
	case set == 'A' && c < 0x60:
		return int(c) - 32, true
	case set == 'B' && c >= 0x20 && c < 0x80:
		return int(c) - 32, true
	}
	return 0, false
}

func code128Bars(payload []byte) ([]bool, string, error) {
	syms, text, err := Code128Symbols(payload)
	if err != nil {
		return nil, "", err
	}
	var m []bool
	for _, s := range syms {
		m = appendWidths(m, code128Patterns[s])
	}
	return m, text, nil
}

// appendWidths appends elements of the given widths ("212222": bar 2,
// space 1, ...), starting with a bar.
func appendWidths(m []bool, widths string) []bool {
	for k := 0; k < len(widths); k++ {
		for range int(widths[k] - '0') {
			m = append(m, k%2 == 0)
		}
	}
	return m
}

// eanL are the left-hand odd-parity (set A) EAN digit patterns; set C (right
// hand) is their complement and set B (even parity) the mirror of set C.
var eanL = [10]string{"0001101", "0011001", "0010011", "0111101", "0100011", "0110001", "0101111", "0111011", "0110111", "0001011"}

// eanParity is the set (A or B) of each of the six left digits of an EAN-13,
// chosen by its first digit, which has no bars of its own.
var eanParity = [10]string{"AAAAAA", "AABABB", "AABBAB", "AABBBA", "ABAABB", "ABBAAB", "ABBBAB", "ABABAB", "ABABBA", "ABBABA"}

// digitsCheck accepts n digits or n+1 with a correct GS1 check digit, and
// returns all n+1 digits as the printer completes them.
func digitsCheck(p []byte, n int) (string, string, error) {
	s := string(p)
	if len(s) != n && len(s) != n+1 {
		return "", "", fmt.Errorf("want %d or %d digits, got %d bytes", n, n+1, len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", "", fmt.Errorf("%q is not all digits", s)
		}
	}
	check := gs1Check(s[:n])
	if len(s) == n+1 && s[n] != check {
		return "", "", fmt.Errorf("check digit %c, want %c", s[n], check)
	}
	s = s[:n] + string(check)
	return s, s, nil
}

// gs1Check is the GS1 mod-10 check digit: weights 3,1,3,... from the right.
func gs1Check(d string) byte {
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if (len(d)-1-i)%2 == 0 {
			v *= 3
		}
		sum += v
	}
	return byte('0' + (10-sum%10)%10)
}

// eanBars draws EAN-13 (n 12) or EAN-8 (n 7).
func eanBars(p []byte, n int) ([]bool, string, error) {
	d, text, err := digitsCheck(p, n)
	if err != nil {
		return nil, "", err
	}
	var sb strings.Builder
	sb.WriteString("101")
	left, right, parity := d[:4], d[4:], "AAAA"
	if n == 12 {
		left, right, parity = d[1:7], d[7:], eanParity[d[0]-'0']
	}
	for i := 0; i < len(left); i++ {
		pat := eanL[left[i]-'0']
		if parity[i] == 'B' {
			pat = reverse(complement(pat))
		}
		sb.WriteString(pat)
	}
	sb.WriteString("01010")
	for i := 0; i < len(right); i++ {
		sb.WriteString(complement(eanL[right[i]-'0']))
	}
	sb.WriteString("101")
	return bitsOf(sb.String()), text, nil
}

func complement(s string) string {
	b := []byte(s)
	for i := range b {
		b[i] ^= 1 // '0' <-> '1'
	}
	return string(b)
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func bitsOf(s string) []bool {
	m := make([]bool, len(s))
	for i := range s {
		m[i] = s[i] == '1'
	}
	return m
}

// itfDigits marks the wide elements of each ITF digit.
var itfDigits = [10]string{"00110", "10001", "01001", "11000", "00101", "10100", "01100", "00011", "10010", "01010"}

// itfWide is the width of a wide ITF element in modules, the ratio the
// renderer's width estimate (9 modules a digit) assumes.
const itfWide = 3

// itfBars draws Interleaved 2 of 5: digit pairs, the first in the bars and
// the second in the spaces.
func itfBars(p []byte) ([]bool, string, error) {
	s := string(p)
	if len(s) < 2 || len(s)%2 != 0 {
		return nil, "", fmt.Errorf("ITF wants an even number of digits, got %d", len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return nil, "", fmt.Errorf("ITF %q is not all digits", s)
		}
	}
	w := func(wide byte) string {
		if wide == '1' {
			return string(rune('0' + itfWide))
		}
		return "1"
	}
	var widths strings.Builder
	widths.WriteString("1111")
	for i := 0; i < len(s); i += 2 {
		a, b := itfDigits[s[i]-'0'], itfDigits[s[i+1]-'0']
		for k := range 5 {
			widths.WriteString(w(a[k]))
			widths.WriteString(w(b[k]))
		}
	}
	widths.WriteString(w('1') + "11")
	return appendWidths(nil, widths.String()), s, nil
}
