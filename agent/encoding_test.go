package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"printgate/agent/api"
	"printgate/drivers/escpos/decode"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestBig5Printer runs a printer whose config overrides its encoding to
// Big5, in front of an emulated printer with a Big5 font: a document in
// traditional Chinese prints as sent, one with characters Big5 lacks is
// refused at intake naming them, and a POS's raw Big5 bytes preview as
// the printer reads them.
func TestBig5Printer(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "tw", model: printertest.ModelClone, dbcs: decode.Big5,
		extra: "profile = \"xprinter-80\"\nencoding = \"Big5\""}}, "")
	ctx := context.Background()
	if _, _, err := h.a.Submit(ctx, spool.NewTask{TaskNo: "TW_v1", Printer: "tw",
		Document: []byte(`{"lines":[{"text":"牛肉麵","right":"x2"},{"text":"備註: 不要香菜"},{"cut":"partial"}]}`)}); err != nil {
		t.Fatal(err)
	}
	h.waitTask("TW_v1", spool.StatePrinted)
	text := h.tickets("tw", 1)[0].Text()
	for _, want := range []string{"牛肉麵", "x2", "備註: 不要香菜"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Big5 printer's ticket lacks %q:\n%s", want, text)
		}
	}
	_, _, err := h.a.Submit(ctx, spool.NewTask{TaskNo: "CN_v1", Printer: "tw",
		Document: []byte(`{"lines":[{"text":"这个"}]}`)})
	if !errors.Is(err, api.ErrBadDocument) || !strings.Contains(err.Error(), "Big5") || !strings.Contains(err.Error(), "这") {
		t.Errorf("simplified Chinese for a Big5 printer: %v, want a bad document naming Big5 and 这", err)
	}
	out, err := h.a.Preview(&spool.Task{TaskNo: "RAW_v1", Printer: "tw", Payload: []byte("\xae\xe0 12\n\x1dV\x00")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "桌 12") {
		t.Errorf("raw Big5 payload previews as:\n%s", out)
	}
}
