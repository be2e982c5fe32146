package escpos

import (
	"fmt"
	"strings"
)

// Symbology is a 1D barcode type, numbered as GS k function B expects.
type Symbology byte

// Supported barcode types.
const (
	UPCA    Symbology = 65
	EAN13   Symbology = 67
	EAN8    Symbology = 68
	CODE39  Symbology = 69
	ITF     Symbology = 70
	CODE128 Symbology = 73
)

var symbologyNames = map[Symbology]string{
	UPCA: "UPCA", EAN13: "EAN13", EAN8: "EAN8", CODE39: "CODE39", ITF: "ITF", CODE128: "CODE128",
}

// String returns the document spelling, e.g. CODE128.
func (s Symbology) String() string {
	if n, ok := symbologyNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Symbology(%d)", byte(s))
}

// ParseSymbology reads a barcode type name (case-insensitive, e.g. "CODE128",
// "ean13").
func ParseSymbology(name string) (Symbology, error) {
	for s, n := range symbologyNames {
		if strings.EqualFold(n, name) {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown barcode type %q (want CODE128, CODE39, EAN13, EAN8, UPCA or ITF)", name)
}

// ValidateBarcode reports whether data can be printed as sym.
func ValidateBarcode(sym Symbology, data string) error {
	_, err := barcodePayload(sym, data)
	return err
}

// barcodePayload checks data for sym and returns the bytes that follow
// GS k m n. Checking here, not at the printer, is what keeps a bad order number
// from becoming garbage on paper.
func barcodePayload(sym Symbology, data string) ([]byte, error) {
	switch sym {
	case CODE128:
		return code128Payload(data)
	case CODE39:
		if data == "" || len(data) > 255 {
			return nil, fmt.Errorf("CODE39 barcode length %d out of range 1..255", len(data))
		}
		for i := 0; i < len(data); i++ {
			c := data[i]
			if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || strings.IndexByte(" $%+-./", c) >= 0) {
				return nil, fmt.Errorf("CODE39 barcode %q: character %q not in 0-9 A-Z space $%%+-./", data, c)
			}
		}
		return []byte(data), nil
	case EAN13:
		return digitsWithCheck("EAN13", data, 12)
	case EAN8:
		return digitsWithCheck("EAN8", data, 7)
	case UPCA:
		return digitsWithCheck("UPCA", data, 11)
	case ITF:
		if len(data) < 2 || len(data) > 254 || len(data)%2 != 0 || !allDigits(data) {
			return nil, fmt.Errorf("ITF barcode %q: want an even number (2..254) of digits", data)
		}
		return []byte(data), nil
	}
	return nil, fmt.Errorf("unsupported barcode type %v", sym)
}

// code128Payload encodes data for GS k m=73. Runs of digits go in code set C
// (two digits per symbol) where that makes the symbol shorter, which is what
// lets an order number like ORD20261130-0042 fit on 58 mm paper; everything
// else goes in code set B with "{" doubled.
func code128Payload(data string) ([]byte, error) {
	if data == "" {
		return nil, fmt.Errorf("CODE128 barcode is empty")
	}
	for i := 0; i < len(data); i++ {
		if c := data[i]; c < 0x20 || c > 0x7E {
			return nil, fmt.Errorf("CODE128 barcode %q: character %q not in printable ASCII", data, c)
		}
	}
	var p []byte
	set := byte(0)
	switchTo := func(s byte) {
		if set != s {
			p = append(p, '{', s)
			set = s
		}
	}
	for i := 0; i < len(data); {
		j := i
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		if run := j - i; run >= 6 || run >= 4 && (i == 0 || j == len(data)) {
			k := i
			if run%2 == 1 {
				k++ // odd run: the first digit goes in set B
			}
			if pairs, ok := codeCPairs(data[k:j]); ok {
				if k > i {
					switchTo('B')
					p = append(p, data[i])
				}
				switchTo('C')
				p = append(p, pairs...)
				i = j
				continue
			}
		}
		switchTo('B')
		if data[i] == '{' {
			p = append(p, '{')
		}
		p = append(p, data[i])
		i++
	}
	if len(p) > 255 {
		return nil, fmt.Errorf("CODE128 barcode is %d bytes encoded, more than 255", len(p))
	}
	return p, nil
}

// codeCPairs packs an even run of digits into code set C values 0..99. It
// refuses runs that would put DLE (16) before 4, 5 or 20: DLE EOT, DLE ENQ and
// DLE DC4 are real-time commands a printer obeys even inside barcode data, and
// DLE DC4 1 pulses the cash drawer.
func codeCPairs(digits string) ([]byte, bool) {
	out := make([]byte, 0, len(digits)/2)
	for k := 0; k < len(digits); k += 2 {
		v := (digits[k]-'0')*10 + digits[k+1] - '0'
		if n := len(out); n > 0 && out[n-1] == cDLE && (v == 4 || v == 5 || v == 20) {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// barcodeModules estimates the width of a barcode in modules (narrow bar
// widths), quiet zones for the printed digits included, so the renderer can
// pick a module width that fits the paper: printers silently print nothing
// when a barcode is wider than the paper.
func barcodeModules(sym Symbology, payload []byte) int {
	switch sym {
	case CODE128:
		symbols := 0
		for i := 0; i < len(payload); i++ {
			if payload[i] == '{' {
				i++ // "{B", "{C" and "{{" are one symbol each
			}
			symbols++
		}
		return 11*symbols + 11 + 13 // data incl. start, check, stop
	case CODE39:
		return 16 * (len(payload) + 2)
	case EAN13, UPCA:
		return 95 + 18
	case EAN8:
		return 67 + 14
	case ITF:
		return 9*len(payload) + 9
	}
	return 11 * len(payload)
}

// digitsWithCheck accepts n digits (the printer adds the check digit) or n+1
// digits whose last is the correct GS1 check digit.
func digitsWithCheck(name, data string, n int) ([]byte, error) {
	if (len(data) != n && len(data) != n+1) || !allDigits(data) {
		return nil, fmt.Errorf("%s barcode %q: want %d or %d digits", name, data, n, n+1)
	}
	if len(data) == n+1 {
		if want := gs1Check(data[:n]); data[n] != want {
			return nil, fmt.Errorf("%s barcode %q: check digit is %c, want %c", name, data, data[n], want)
		}
	}
	return []byte(data), nil
}

// gs1Check computes the GS1 mod-10 check digit: weights 3,1,3,... from the
// rightmost digit.
func gs1Check(digits string) byte {
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if (len(digits)-1-i)%2 == 0 {
			d *= 3
		}
		sum += d
	}
	return byte('0' + (10-sum%10)%10)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
