package escpos_test

import (
	"errors"
	"strings"
	"testing"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

func profile(t *testing.T, name string) escpos.Profile {
	t.Helper()
	p, err := escpos.LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parseDoc(t *testing.T, js string) *escpos.Document {
	t.Helper()
	d, err := escpos.ParseDocument([]byte(js))
	if err != nil {
		t.Fatalf("parse %s: %v", js, err)
	}
	return d
}

// kitchenCJK has Chinese on line 3 (text and right) and line 5 (a box
// drawing rule WPC1252 lacks and PC437 has); lines 1, 2 and 4 print
// anywhere (the arrow and the fullwidth digits through their ASCII
// look-alikes).
const kitchenCJK = `{"lines":[
	{"text":"Table 12 → kitchen","bold":true},
	{"text":"Order １２"},
	{"text":"宫保鸡丁 宫保","right":"两份"},
	{"feed":1},
	{"rule":"═"}
]}`

// TestCheckDocumentRefusesCJKOnLatinProfile ensures CJK text for a
// WPC1252 printer is refused, naming every offending line and field, the
// profile's encoding and the characters, each once.
func TestCheckDocumentRefusesCJKOnLatinProfile(t *testing.T) {
	err := escpos.CheckDocument(parseDoc(t, kitchenCJK), profile(t, "epson-80"))
	var ue *escpos.UnprintableError
	if !errors.As(err, &ue) {
		t.Fatalf("CheckDocument = %v, want an *UnprintableError", err)
	}
	want := []escpos.UnprintableText{
		{Line: 3, Field: "text", Text: "宫保鸡丁 宫保", Chars: []rune("宫保鸡丁")},
		{Line: 3, Field: "right", Text: "两份", Chars: []rune("两份")},
		{Line: 5, Field: "rule", Text: "═", Chars: []rune("═")},
	}
	if len(ue.Texts) != len(want) {
		t.Fatalf("texts %+v, want %+v", ue.Texts, want)
	}
	for i, w := range want {
		g := ue.Texts[i]
		if g.Line != w.Line || g.Field != w.Field || g.Text != w.Text || string(g.Chars) != string(w.Chars) {
			t.Errorf("text %d = %+v, want %+v", i, g, w)
		}
	}
	msg := err.Error()
	for _, s := range []string{
		`line 3: text "宫保鸡丁 宫保" has characters the printer's encoding (WPC1252, profile epson-80) cannot print: 宫 保 鸡 丁`,
		`line 3: right "两份"`,
		`line 5: rule "═"`,
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
	if strings.Contains(msg, "line 1") || strings.Contains(msg, "line 2") {
		t.Errorf("message %q names a line that prints (arrow and fullwidth digits have look-alikes)", msg)
	}
}

// TestCheckDocumentAcceptsWhatPrints ensures a document is accepted exactly
// when every character comes out on paper: CJK on a GB18030 profile,
// accented Latin (also in decomposed form) on PC437 and WPC1252, a PC437
// box rule on PC437. The accepted Latin ticket is rendered and decoded by
// the emulator to show it really prints as written.
func TestCheckDocumentAcceptsWhatPrints(t *testing.T) {
	latin := `{"lines":[{"text":"Crème brûlée","right":"2×"},{"text":"Jalapen\u0303o, façade, naïve"}]}`
	cases := []struct {
		doc, profile string
	}{
		{kitchenCJK, "xprinter-80"},
		{kitchenCJK, "xprinter-58"},
		{latin, "oneway-80"}, // PC437
		{latin, "epson-80"},  // WPC1252
		{`{"lines":[{"rule":"═"},{"text":"ÄÖÜ ß £"}]}`, "oneway-80"},
	}
	for _, tc := range cases {
		if err := escpos.CheckDocument(parseDoc(t, tc.doc), profile(t, tc.profile)); err != nil {
			t.Errorf("%s on %s: %v", tc.doc, tc.profile, err)
		}
	}

	p := profile(t, "oneway-80")
	job, err := escpos.Render(parseDoc(t, latin), p, escpos.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := printertest.Parse(job, false)
	if len(tk) != 1 || !tk[0].Contains("Crème brûlée") || !tk[0].Contains("Jalapeño, façade, naïve") {
		t.Fatalf("rendered on PC437: %+v", tk)
	}
}

// TestCheckDocumentMatchesRender ensures CheckDocument refuses exactly the
// characters Render prints as "?": a refused text renders with question
// marks that the document did not have.
func TestCheckDocumentMatchesRender(t *testing.T) {
	p := profile(t, "oneway-80")
	for _, s := range []string{"宫保鸡丁", "€5", "“quoted” — ok…", "Ａ１", "tea 🍵", "Ωmega ½"} {
		doc := &escpos.Document{Lines: []escpos.Line{escpos.TextLine{Text: s}}}
		checkErr := escpos.CheckDocument(doc, p)
		job, err := escpos.Render(doc, p, escpos.RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tk, _ := printertest.Parse(job, false)
		question := len(tk) == 1 && tk[0].Contains("?")
		if (checkErr != nil) != question {
			t.Errorf("%q: CheckDocument %v, but Render printed %+v", s, checkErr, tk)
		}
	}
}
