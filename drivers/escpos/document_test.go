package escpos

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestParseDocumentErrors ensures bad documents are refused with a message
// that names the line and says what is wrong.
func TestParseDocumentErrors(t *testing.T) {
	cases := []struct {
		doc, want string
	}{
		{`{"lines":[{"text":"a"},{"rule":"-"},{"qr":"x","size":20}]}`, "line 3: qr size 20 out of range 1..16"},
		{`{"lines":[{"qr":"x","size":0}]}`, "line 1: qr size 0 out of range 1..16"},
		{`{"lines":[{"text":"a"}],"copies":2}`, `document: unknown key "copies" (want lines)`},
		{`{"lines":[{"text":"a","colour":"red"}]}`, `line 1: unknown key "colour" for a text line`},
		{`{"lines":[{"qr":"x","type":"CODE128"}]}`, `line 1: unknown key "type" for a qr line`},
		{`{"lines":[{"text":"a","qr":"b"}]}`, "line 1: has both text and qr: a line is exactly one kind"},
		{`{"lines":[{"text":"a"},{}]}`, "line 2: no content"},
		// A line with only a misspelled key names the key,
		// not "no content".
		{`{"lines":[{"txt":"a"}]}`, `line 1: unknown key "txt"; did you mean "text"? (a line needs one of text, rule`},
		{`{"lines":[{"colour":"red"}]}`, `line 1: unknown key "colour" (a line needs one of text, rule`},
		{`{"lines":[{"text":"a","allign":"center"}]}`, `line 1: unknown key "allign" for a text line; did you mean "align"?`},
		{`{"lines":[{"text":"a","size":"9x9"}]}`, `line 1: size "9x9": want WxH`},
		{`{"lines":[{"text":"a","size":2}]}`, "line 1: size must be a string"},
		{`{"lines":[{"text":"a","align":"middle"}]}`, `line 1: align "middle": want left, center or right`},
		{`{"lines":[{"text":"a","align":"center","right":"x"}]}`, "line 1: right cannot be combined with align center"},
		{`{"lines":[{"text":null}]}`, "line 1: text must be a string"},
		{`{"lines":[{"text":"a","bold":"yes"}]}`, "line 1: bold must be true or false"},
		{`{"lines":[{"drawer":false}]}`, "line 1: drawer must be true"},
		{`{"lines":[{"cut":"half"}]}`, `line 1: cut "half": want full or partial`},
		{`{"lines":[{"feed":0}]}`, "line 1: feed 0 out of range 1..255"},
		{`{"lines":[{"feed":2.5}]}`, "line 1: feed must be a whole number"},
		{`{"lines":[{"beep":10}]}`, "line 1: beep 10 out of range 1..9"},
		{`{"lines":[{"feed":255},{"feed":255}]}`, "line 2: feeds add up to 510 lines, more than 500"},
		{`{"lines":[{"rule":"--"}]}`, `line 1: rule "--": want exactly one printable character`},
		{`{"lines":[{"rule":"\u001b"}]}`, "line 1: rule"},
		{`{"lines":[{"qr":"\u0000"}]}`, "line 1: qr has no data"},
		{`{"lines":[{"barcode":"12345","type":"EAN13"}]}`, `line 1: EAN13 barcode "12345": want 12 or 13 digits`},
		{`{"lines":[{"barcode":"A","type":"PDF417"}]}`, `line 1: unknown barcode type "PDF417"`},
		{`{"lines":[{"image":"not base64!"}]}`, "line 1: image is not base64"},
		{`{"lines":[{"image":"aGVsbG8="}]}`, "line 1: image is not a PNG"},
		{`{"lines":[{"text":"a","text":"b"}]}`, `line 1: key "text" appears twice`},
		{`{"lines":[{"text":"a"}]} {}`, "document: unexpected data after the closing brace"},
		{`{"lines":[]}`, "document has no lines"},
		{`{"lines":null}`, "document: missing lines"},
		{`{}`, "document: missing lines"},
		{`[]`, "document: must be a JSON object"},
		{`{"lines":[1]}`, "line 1: must be a JSON object"},
		{`{"lines":[{"text":"a"}`, "document: not valid JSON"},
	}
	for _, c := range cases {
		_, err := ParseDocument([]byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseDocument(%s):\n got %v\nwant %s...", c.doc, err, c.want)
		}
	}
}

// TestParseDocumentFields ensures every PROTOCOL.md §4 field lands in the
// right place, with defaults where a field is left out.
func TestParseDocumentFields(t *testing.T) {
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	img := base64.StdEncoding.EncodeToString(pngBuf.Bytes())
	d := mustParse(t, `{"lines": [
		{"text": "桌 12 · 堂食", "align": "center", "size": "2x3", "bold": true, "underline": true},
		{"text": "宫保鸡丁", "right": "x2"},
		{"rule": "-"},
		{"qr": "https://example.com/o/42", "size": 6},
		{"qr": "q"},
		{"barcode": "ORD20261130-0042", "type": "CODE128"},
		{"barcode": "ABC", "type": "code39"},
		{"barcode": "plain"},
		{"image": "`+img+`"},
		{"image": "data:image/png;base64,`+img+`"},
		{"feed": 2}, {"beep": 2}, {"drawer": true}, {"cut": "partial"}, {"cut": "full"}
	]}`)
	want := []Line{
		TextLine{Text: "桌 12 · 堂食", Align: AlignCenter, Size: TextSize{2, 3}, Bold: true, Underline: true},
		TextLine{Text: "宫保鸡丁", Right: "x2"},
		RuleLine{Char: "-"},
		QRLine{Data: "https://example.com/o/42", Size: 6},
		QRLine{Data: "q"},
		BarcodeLine{Data: "ORD20261130-0042", Type: CODE128},
		BarcodeLine{Data: "ABC", Type: CODE39},
		BarcodeLine{Data: "plain", Type: CODE128},
		ImageLine{PNG: pngBuf.Bytes()},
		ImageLine{PNG: pngBuf.Bytes()},
		FeedLine{Lines: 2}, BeepLine{Times: 2}, DrawerLine{}, CutLine{Kind: CutPartial}, CutLine{Kind: CutFull},
	}
	if !reflect.DeepEqual(d.Lines, want) {
		t.Errorf("parsed\n%#v\nwant\n%#v", d.Lines, want)
	}
}

// TestDocumentJSONRoundTrip ensures MarshalJSON writes what ParseDocument
// reads back unchanged, and that json.Unmarshal is as strict as
// ParseDocument.
func TestDocumentJSONRoundTrip(t *testing.T) {
	for _, name := range []string{"kitchen-zh.json", "receipt-en.json"} {
		src, err := os.ReadFile(filepath.Join(testdataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		d := mustParse(t, string(src))
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back Document
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s: re-parse: %v\n%s", name, err, out)
		}
		if !reflect.DeepEqual(*d, back) {
			t.Errorf("%s: round trip changed the document:\n%s", name, out)
		}
	}
	var d Document
	if err := json.Unmarshal([]byte(`{"lines":[{"text":"a","bogus":1}]}`), &d); err == nil {
		t.Error("json.Unmarshal accepted an unknown key")
	}
}

// TestValidateBuiltDocuments ensures documents built in Go get the same
// checks as parsed ones.
func TestValidateBuiltDocuments(t *testing.T) {
	cases := []struct {
		doc  Document
		want string
	}{
		{Document{}, "document has no lines"},
		{Document{Lines: []Line{TextLine{Text: "a"}, nil}}, "line 2: empty line"},
		{Document{Lines: []Line{TextLine{Size: TextSize{0, 2}}}}, "line 1: size 0x2 out of range"},
		{Document{Lines: []Line{QRLine{Data: "x", Size: 17}}}, "line 1: qr size 17 out of range 1..16"},
		{Document{Lines: []Line{QRLine{Data: strings.Repeat("x", 1037)}}}, "line 1: qr data of exactly 1037 bytes cannot be sent safely"},
		{Document{Lines: []Line{BarcodeLine{Data: "abc", Type: CODE39}}}, "line 1: CODE39 barcode"},
		{Document{Lines: []Line{CutLine{Kind: 7}}}, "line 1: cut kind 7 unknown"},
	}
	for _, c := range cases {
		err := c.doc.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Validate(%#v) = %v, want %s...", c.doc, err, c.want)
		}
		if len(c.doc.Lines) == 0 {
			continue // Render prints banners alone for an empty document
		}
		if _, err := Render(&c.doc, mustProfile(t, "epson-80"), RenderOptions{}); err == nil {
			t.Errorf("Render accepted %#v", c.doc)
		}
	}
}
