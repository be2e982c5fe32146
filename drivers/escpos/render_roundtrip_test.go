package escpos_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
	"printgate/drivers/printertest"
)

func renderTo(t *testing.T, pr *printertest.Printer, docJSON, profile string, opts escpos.RenderOptions) printertest.Ticket {
	t.Helper()
	doc, err := escpos.ParseDocument([]byte(docJSON))
	if err != nil {
		t.Fatal(err)
	}
	p, err := escpos.LookupProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := escpos.Render(doc, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	before := len(pr.Tickets())
	if _, err := pr.Write(out); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tickets, err := pr.WaitTickets(ctx, before+1)
	if err != nil {
		t.Fatalf("no ticket came out: %v", err)
	}
	return tickets[before]
}

// TestRoundTripGB18030 ensures a Chinese document rendered for xprinter-80
// comes out of an emulated clone (which powers on in GB18030 mode) with the
// same Chinese text, laid out as the preview shows, and with the control
// bytes of the note printed as nothing.
func TestRoundTripGB18030(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "escpos", "kitchen-zh.json"))
	if err != nil {
		t.Fatal(err)
	}
	pr := printertest.New(printertest.Options{Name: "kitchen", Model: printertest.ModelClone, PowerOnCJK: true})
	defer pr.Close()
	tk := renderTo(t, pr, string(src), "xprinter-80", escpos.RenderOptions{PossibleDuplicate: true})
	for _, want := range []string{"可能重复", "厨房单 KITCHEN", "宫保鸡丁", "Coca-Cola 可口可乐 330ml", "备注: 顾客对花生过敏!", "请勿使用花生油px", "下单时间 2026-11-30 18:42"} {
		if !tk.Contains(want) {
			t.Errorf("printed ticket lacks %q:\n%s", want, tk.Text())
		}
	}
	if len(tk.Drawer) != 0 {
		t.Errorf("the note kicked the drawer: %+v", tk.Drawer)
	}
	if tk.Cut != "partial" || tk.Beeps == 0 {
		t.Errorf("cut %q beeps %d, want partial cut and a beep", tk.Cut, tk.Beeps)
	}

	// The preview and the paper agree row by row on the plain text rows.
	doc, _ := escpos.ParseDocument(src)
	p, _ := escpos.LookupProfile("xprinter-80")
	prev, err := escpos.Preview(doc, p, escpos.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range strings.Split(prev, "\n") {
		row = strings.TrimRight(row, " ")
		if strings.HasPrefix(row, "单号") && !tk.Contains(row) {
			t.Errorf("preview row %q not on paper:\n%s", row, tk.Text())
		}
	}
}

// TestRoundTripDoubleByte ensures a printer profile overridden to Big5 or
// Shift_JIS sends its text in that set: an emulated printer whose Kanji
// font is that set prints the document's text, the banners in its
// language, half-width katakana widened, and rows as the preview lays them
// out.
func TestRoundTripDoubleByte(t *testing.T) {
	cases := []struct {
		enc  string
		set  decode.DoubleByte
		doc  string
		want []string
	}{
		{escpos.EncodingBig5, decode.Big5,
			`{"lines":[{"text":"廚房單 KITCHEN"},{"text":"牛肉麵","right":"x2"},{"text":"備註: 不要香菜"},{"cut":"partial"}]}`,
			[]string{"可能重複", "補印", "廚房單 KITCHEN", "牛肉麵", "備註: 不要香菜"}},
		{escpos.EncodingShiftJIS, decode.ShiftJIS,
			`{"lines":[{"text":"厨房 KITCHEN"},{"text":"ラーメン","right":"x2"},{"text":"ｺｰﾋｰ 熱い"},{"cut":"partial"}]}`,
			[]string{"重複の可能性", "再印刷", "厨房 KITCHEN", "ラーメン", "コーヒー 熱い"}},
	}
	for _, tc := range cases {
		t.Run(tc.enc, func(t *testing.T) {
			enc := tc.enc
			p, err := profile(t, "xprinter-80").With(escpos.ProfileOverrides{Encoding: &enc})
			if err != nil {
				t.Fatal(err)
			}
			doc, err := escpos.ParseDocument([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := escpos.CheckDocument(doc, p); err != nil {
				t.Fatalf("%s cannot print the document: %v", tc.enc, err)
			}
			opts := escpos.RenderOptions{PossibleDuplicate: true, Reprint: true}
			out, err := escpos.Render(doc, p, opts)
			if err != nil {
				t.Fatal(err)
			}
			// A Japanese printer may be set to read JIS: the stream says
			// Shift JIS (FS C 1); no other set has FS C.
			if sel := bytes.Contains(out, []byte{0x1c, 'C', 1}); sel != (tc.set == decode.ShiftJIS) {
				t.Errorf("FS C 1 in the stream: %v", sel)
			}
			// Neither printer needs a power-on mode: the stream says FS &.
			tk, _ := printertest.ParseWith(out, decode.Options{DoubleByte: tc.set})
			if len(tk) != 1 {
				t.Fatalf("%d tickets, want 1", len(tk))
			}
			for _, w := range tc.want {
				if !tk[0].Contains(w) {
					t.Errorf("printed ticket lacks %q:\n%s", w, tk[0].Text())
				}
			}
			prev, err := escpos.Preview(doc, p, escpos.RenderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range strings.Split(prev, "\n") {
				if row = strings.TrimRight(row, " "); strings.Contains(row, "x2") && !tk[0].Contains(row) {
					t.Errorf("preview row %q not on paper:\n%s", row, tk[0].Text())
				}
			}
		})
	}
}

// TestRoundTripEnglish ensures a receipt for epson-58 prints its code page
// text, QR, barcodes, image and drawer kick on an emulated Epson.
func TestRoundTripEnglish(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "escpos", "receipt-en.json"))
	if err != nil {
		t.Fatal(err)
	}
	pr := printertest.New(printertest.Options{Name: "front", Model: printertest.ModelEpson})
	defer pr.Close()
	tk := renderTo(t, pr, string(src), "epson-58", escpos.RenderOptions{})
	for _, want := range []string{"Flat white", "€3.80", "CAFÉ", "Card ****4242"} {
		if !tk.Contains(want) {
			t.Errorf("printed ticket lacks %q:\n%s", want, tk.Text())
		}
	}
	if len(tk.QR) != 1 || tk.QR[0] != "https://example.com/r/ORD20261130-0042" {
		t.Errorf("QR %q", tk.QR)
	}
	if len(tk.Barcodes) != 2 || code128Text(tk.Barcodes[0]) != "ORD20261130-0042" || tk.Barcodes[1] != "4006381333931" {
		t.Errorf("barcodes %q", tk.Barcodes)
	}
	if len(tk.Images) != 1 || tk.Images[0].Width > 384 {
		t.Errorf("images %+v", tk.Images)
	}
	if len(tk.Drawer) != 1 {
		t.Errorf("drawer kicks %+v, want one", tk.Drawer)
	}
}

// code128Text reads the code set switches of GS k CODE128 data ("{B" text,
// "{C" digit pairs, "{{" a brace), starting in set B. The emulator reports
// the data after the leading "{B" as it came; the renderer packs digit runs
// in set C so long order numbers fit 58 mm paper.
func code128Text(s string) string {
	var b strings.Builder
	setC := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'B':
				setC = false
			case 'C':
				setC = true
			case '{':
				b.WriteByte('{')
			}
			continue
		}
		if setC {
			b.WriteByte('0' + c/10)
			b.WriteByte('0' + c%10)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
