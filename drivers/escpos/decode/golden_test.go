package decode

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden decodes in testdata/golden")

// dump is a decode as text, one line per item, for golden files.
func dump(tickets []Ticket, pending Ticket, incomplete int) string {
	var sb strings.Builder
	for i, t := range append(tickets, pending) {
		fmt.Fprintf(&sb, "ticket %d\n", i+1)
		for _, it := range t.Items {
			switch it.Kind {
			case KindText:
				fmt.Fprintf(&sb, "  text align=%d", it.Line.Align)
				for _, s := range it.Line.Spans {
					fmt.Fprintf(&sb, " %dx%d", s.Style.W, s.Style.H)
					if s.Style.Bold {
						sb.WriteString("b")
					}
					if s.Style.Underline {
						sb.WriteString("u")
					}
					if s.Style.Inverted {
						sb.WriteString("i")
					}
					fmt.Fprintf(&sb, "%q", s.Text)
				}
				sb.WriteString("\n")
			case KindQR:
				fmt.Fprintf(&sb, "  QR model=%d module=%d align=%d %q\n", it.QR.Model, it.QR.Module, it.QR.Align, it.QR.Data)
			case KindSymbol:
				fmt.Fprintf(&sb, "  %s align=%d %q\n", it.Symbol.Type, it.Symbol.Align, it.Symbol.Data)
			case KindBarcode:
				fmt.Fprintf(&sb, "  barcode m=%d %q\n", it.Barcode.Sym, it.Barcode.Text)
			case KindImage:
				fmt.Fprintf(&sb, "  image %dx%d dots=%v align=%d\n", it.Image.Width, it.Image.Height, it.Image.Bits != nil, it.Image.Align)
			case KindBeep:
				fmt.Fprintf(&sb, "  beep %d\n", it.Beeps)
			case KindDrawer:
				fmt.Fprintf(&sb, "  drawer pin %d\n", it.Drawer.Pin)
			}
		}
		for _, u := range t.Unknown {
			fmt.Fprintf(&sb, "  unknown at %d, %d bytes\n", u.Offset, u.Len)
		}
		if t.Cut != "" {
			fmt.Fprintf(&sb, "  cut %s\n", t.Cut)
		}
	}
	fmt.Fprintf(&sb, "incomplete %d\n", incomplete)
	return sb.String()
}

// TestGolden decodes every stream in testdata/golden (*.bin) and compares
// the decode with its .golden file; go test -update rewrites them. The
// streams are hand-made (see README in that folder) to look like what
// third-party POS encoders send: ESC t code pages, 2D symbols, bit images.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden streams")
	}
	for _, f := range files {
		stream, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got := dump(Decode(stream, strings.Contains(filepath.Base(f), "cjk")))
		golden := strings.TrimSuffix(f, ".bin") + ".golden"
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s decodes as\n%s\nwant\n%s", f, got, want)
		}
	}
}
