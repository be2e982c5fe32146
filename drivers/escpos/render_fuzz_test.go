package escpos

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func fuzzSeeds(f *testing.F) [][]byte {
	seeds := [][]byte{
		[]byte(`{"lines":[{"text":"note \u001bp\u0000\u0019x","right":"x2","size":"2x2"}]}`),
		[]byte(`{"lines":[{"text":"宫保鸡丁 Coca-Cola 可口可乐 😀","align":"center","underline":true},{"rule":"═"},{"cut":"full"}]}`),
		[]byte(`{"lines":[{"qr":"x\u0010\u0004y","size":16},{"barcode":"1620160416052001"},{"barcode":"4006381333931","type":"EAN13"}]}`),
		[]byte(`{"lines":[{"feed":3},{"beep":9},{"drawer":true},{"text":"\r\n\t\u0085\u200b"}]}`),
	}
	for _, name := range []string{"kitchen-zh.json", "receipt-en.json"} {
		b, err := os.ReadFile(filepath.Join(testdataDir, name))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzParseDocument ensures the parser never panics and that whatever it
// accepts survives a MarshalJSON round trip unchanged.
func FuzzParseDocument(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDocument(data)
		if err != nil {
			if d != nil {
				t.Fatal("document returned with an error")
			}
			return
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("marshal accepted document: %v", err)
		}
		back, err := ParseDocument(out)
		if err != nil {
			t.Fatalf("re-parse %s: %v", out, err)
		}
		if !reflect.DeepEqual(d, back) {
			t.Fatalf("round trip changed %s", out)
		}
	})
}

// FuzzRender ensures rendering never panics, every output is clean ESC/POS
// (scanStream: only commands the renderer emits, no control byte in text, no
// real-time command anywhere), ESC p appears exactly once per drawer line,
// errors name a line, and Preview agrees with Render on success.
func FuzzRender(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, uint8(i), uint8(i))
	}
	var profiles []Profile
	for _, n := range ProfileNames() {
		profiles = append(profiles, mustProfile(f, n))
	}
	for _, enc := range []string{EncodingBig5, EncodingShiftJIS} {
		p, err := mustProfile(f, "xprinter-80").With(ProfileOverrides{Encoding: &enc})
		if err != nil {
			f.Fatal(err)
		}
		profiles = append(profiles, p)
	}
	f.Fuzz(func(t *testing.T, data []byte, profile, flags uint8) {
		d, err := ParseDocument(data)
		if err != nil {
			return
		}
		p := profiles[int(profile)%len(profiles)]
		opts := RenderOptions{PossibleDuplicate: flags&1 != 0, Reprint: flags&2 != 0}
		if flags&4 != 0 {
			opts.FailoverFrom, opts.FailoverTo = "kitchen\x1bp\x00", "bar"
		}
		out, err := Render(d, p, opts)
		_, perr := Preview(d, p, opts)
		if (err == nil) != (perr == nil) {
			t.Fatalf("render err %v but preview err %v", err, perr)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("render error does not name a line: %v", err)
			}
			return
		}
		s, err := scanStream(out)
		if err != nil {
			t.Fatalf("%v\n% X", err, out)
		}
		drawers := 0
		for _, l := range d.Lines {
			if _, ok := l.(DrawerLine); ok {
				drawers++
			}
		}
		if s.commands["1B 70"] != drawers {
			t.Fatalf("%d ESC p for %d drawer lines", s.commands["1B 70"], drawers)
		}
		if !bytes.HasPrefix(out, []byte{0x1B, 0x40}) {
			t.Fatal("output does not start with ESC @")
		}
	})
}

// FuzzWrap ensures wrapping loses no character (only spaces at breaks),
// keeps every row within the width unless a single glyph is wider, and
// never starts a row with closing punctuation it could have avoided.
func FuzzWrap(f *testing.F) {
	f.Add("鱼香肉丝（少辣，不要葱，多放醋） Coca-Cola x2", uint8(7))
	f.Add("a very long wordthatdoesnotfit and more", uint8(5))
	c := newCodec(Profile{Encoding: EncodingGB18030})
	f.Fuzz(func(t *testing.T, s string, w uint8) {
		width := int(w%64) + 1
		text := c.printable(cleanText(s))
		rows := wrap(text, width, c.runeWidth)
		strip := func(s string) string { return strings.NewReplacer(" ", "", "\n", "").Replace(s) }
		if got, want := strip(strings.Join(rows, "")), strip(text); got != want {
			t.Fatalf("wrap(%q, %d) lost text: %q", text, width, rows)
		}
		for _, r := range rows {
			if c.strWidth(r) > width && len([]rune(r)) > 1 {
				t.Fatalf("wrap(%q, %d): row %q too wide", text, width, r)
			}
		}
	})
}
