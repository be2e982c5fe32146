package escpos_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"printgate/drivers/escpos"
)

// goldenDir holds the sample documents and their golden renderings.
const goldenDir = "../../testdata/escpos"

// TestRenderFileGolden ensures RenderFile gives exactly the golden ESC/POS
// stream and the golden preview for a document file, with banners passed
// through, so the CLI built on it prints what the agent would.
func TestRenderFileGolden(t *testing.T) {
	cases := []struct {
		doc, profile string
		opts         escpos.RenderOptions
		out          escpos.Output
		golden       string
	}{
		{"kitchen-zh.json", "xprinter-80", escpos.RenderOptions{}, escpos.OutputESCPOS, "kitchen-zh.xprinter-80.bin"},
		{"kitchen-zh.json", "xprinter-80", escpos.RenderOptions{}, escpos.OutputPreview, "kitchen-zh.xprinter-80.preview.txt"},
		{"kitchen-zh.json", "xprinter-58", escpos.RenderOptions{PossibleDuplicate: true, FailoverFrom: "kitchen", FailoverTo: "bar"}, escpos.OutputESCPOS, "kitchen-zh.xprinter-58.failover.bin"},
		{"receipt-en.json", "epson-80", escpos.RenderOptions{Reprint: true}, escpos.OutputPreview, "receipt-en.epson-80.reprint.preview.txt"},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			p, err := escpos.LookupProfile(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(goldenDir, c.golden))
			if err != nil {
				t.Fatal(err)
			}
			got, err := escpos.RenderFile(filepath.Join(goldenDir, c.doc), nil, p, c.opts, c.out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%d bytes, want the %d of %s", len(got), len(want), c.golden)
			}
		})
	}
}

// TestLoadDocumentStdin ensures "-" reads the document from stdin and
// nothing else does, and that a failing stdin is reported as such.
func TestLoadDocumentStdin(t *testing.T) {
	doc, err := escpos.LoadDocument("-", strings.NewReader(`{"lines":[{"text":"hello"}]}`))
	if err != nil || len(doc.Lines) != 1 {
		t.Fatalf("doc %+v, err %v", doc, err)
	}
	if tl, ok := doc.Lines[0].(escpos.TextLine); !ok || tl.Text != "hello" {
		t.Errorf("line %#v", doc.Lines[0])
	}
	broken := errors.New("pipe broke")
	if _, err := escpos.LoadDocument("-", iotest.ErrReader(broken)); !errors.Is(err, broken) || !strings.Contains(err.Error(), "stdin") {
		t.Errorf("stdin read error: %v", err)
	}
	if _, err := escpos.LoadDocument("-", nil); err == nil {
		t.Error("no stdin accepted")
	}
}

// TestRenderFileErrors ensures every failure names the document, parse and
// render errors name its line, and a missing file stays fs.ErrNotExist.
func TestRenderFileErrors(t *testing.T) {
	p, _ := escpos.LookupProfile("epson-58")
	dir := t.TempDir()
	write := func(name, s string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	badJSON := write("bad.json", `{"lines":[{"text":1}]}`)
	badQR := write("qr.json", `{"lines":[{"text":"x"},{"qr":"x","size":20}]}`)
	longBarcode := write("bc.json", `{"lines":[{"barcode":"ABCDEFGHIJKLMNOPQRSTUV","type":"CODE39"}]}`)
	missing := filepath.Join(dir, "nope.json")

	for _, out := range []escpos.Output{escpos.OutputESCPOS, escpos.OutputPreview} {
		if _, err := escpos.RenderFile(missing, nil, p, escpos.RenderOptions{}, out); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
			t.Errorf("missing file: %v", err)
		}
		if _, err := escpos.RenderFile(badJSON, nil, p, escpos.RenderOptions{}, out); err == nil || !strings.HasPrefix(err.Error(), badJSON+": line 1") {
			t.Errorf("bad document: %v", err)
		}
		if _, err := escpos.RenderFile(badQR, nil, p, escpos.RenderOptions{}, out); err == nil || err.Error() != badQR+": line 2: qr size 20 out of range 1..16" {
			t.Errorf("bad qr: %v", err)
		}
		// Parses, but does not fit 58 mm paper: a render error, not a parse error.
		if _, err := escpos.RenderFile(longBarcode, nil, p, escpos.RenderOptions{}, out); err == nil || !strings.HasPrefix(err.Error(), longBarcode+": line 1: CODE39 barcode") {
			t.Errorf("long barcode: %v", err)
		}
	}
	if _, err := escpos.RenderFile(badQR, nil, p, escpos.RenderOptions{}, escpos.Output(9)); err == nil {
		t.Error("unknown output accepted")
	}
}
