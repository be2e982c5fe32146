package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"printgate/drivers/escpos"
)

// TestTicket is the test print: what a technician needs to see on paper to
// know the printer, its profile and the agent agree. The manager page's
// Test print fills Printer, Profile and At; printgate test-print adds what
// it knows besides (the printer's URL and state, what it confirms, the
// agent's version), its task_no and the width check.
type TestTicket struct {
	Printer string
	Profile escpos.Profile
	At      time.Time
	// Details are more label/value rows, after the profile's.
	Details [][2]string
	// Ruler adds a line exactly the profile's columns wide, so a wrong
	// column count shows as a wrap or a short line.
	Ruler bool
	// TaskNo, when set, is the QR's data and is printed at the end, so
	// the paper names the task that printed it.
	TaskNo string
}

// scriptCheck is, per double-byte encoding, a line of the printer's own
// script for its test ticket ("test: printing works"): a printer whose
// font is another set prints it as garbage, which shows the encoding is
// wrong before a real order does.
var scriptCheck = map[string]string{
	escpos.EncodingGB18030:  "中文测试：打印正常",
	escpos.EncodingBig5:     "中文測試：列印正常",
	escpos.EncodingShiftJIS: "日本語テスト：印刷正常",
}

// Document is the ticket as a document for its profile, checked to print
// there: text is ASCII but for the script line, which is left out where
// the profile cannot print it.
func (tt TestTicket) Document() (json.RawMessage, error) {
	p := tt.Profile
	doc := &escpos.Document{Lines: []escpos.Line{
		escpos.TextLine{Text: "PRINTGATE TEST", Align: escpos.AlignCenter, Size: escpos.TextSize{W: 2, H: 2}, Bold: true},
		escpos.RuleLine{Char: "-"},
		escpos.TextLine{Text: "Printer", Right: tt.Printer},
		escpos.TextLine{Text: "Time", Right: tt.At.Format("2006-01-02 15:04:05")},
		escpos.TextLine{Text: "Profile", Right: p.Name},
		escpos.TextLine{Text: "Paper", Right: fmt.Sprintf("%d dots, %d columns", p.Dots, p.Columns)},
		escpos.TextLine{Text: "Encoding", Right: p.Encoding},
	}}
	for _, d := range tt.Details {
		doc.Lines = append(doc.Lines, escpos.TextLine{Text: d[0], Right: d[1]})
	}
	doc.Lines = append(doc.Lines, escpos.RuleLine{Char: "-"})
	if tt.Ruler {
		doc.Lines = append(doc.Lines, escpos.TextLine{Text: "Width check:"}, escpos.TextLine{Text: ruler(p.Columns)})
	}
	qr := fmt.Sprintf("printgate test %s %s", tt.Printer, tt.At.Format(time.RFC3339))
	if tt.TaskNo != "" {
		qr = "printgate test " + tt.TaskNo
	}
	doc.Lines = append(doc.Lines, escpos.QRLine{Data: qr})
	if text, ok := scriptCheck[p.Encoding]; ok {
		line := escpos.TextLine{Text: text, Align: escpos.AlignCenter}
		withScript := &escpos.Document{Lines: append(append([]escpos.Line(nil), doc.Lines...), line)}
		if escpos.CheckDocument(withScript, p) == nil {
			doc = withScript
		}
	}
	doc.Lines = append(doc.Lines, escpos.TextLine{Text: "If you can read this, the printer works.", Align: escpos.AlignCenter})
	if tt.TaskNo != "" {
		doc.Lines = append(doc.Lines, escpos.TextLine{Text: tt.TaskNo, Align: escpos.AlignCenter})
	}
	doc.Lines = append(doc.Lines, escpos.CutLine{Kind: escpos.CutPartial})
	if err := escpos.CheckDocument(doc, p); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// ruler is a line exactly columns wide, so a wrong column count shows as a
// wrap or a short line.
func ruler(columns int) string {
	b := make([]byte, max(columns, 1))
	for i := range b {
		b[i] = byte('0' + (i+1)%10)
	}
	return string(b)
}
