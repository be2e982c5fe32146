package escpos

import (
	"encoding/json"
	"strings"
	"testing"

	"printgate/drivers/escpos/decode"
)

// TestBuiltinProfiles ensures the built-ins are valid and carry the paper
// facts of docs/ESCPOS.md §3 (58 mm: 384 dots, 32/42 columns; 80 mm: 576 dots,
// 48/64 columns) and GB18030 exactly for the Chinese printers.
func TestBuiltinProfiles(t *testing.T) {
	want := []string{"epson-58", "epson-80", "oneway-80", "xprinter-58", "xprinter-80"}
	if got := ProfileNames(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ProfileNames() = %v, want %v", got, want)
	}
	for _, name := range want {
		p := mustProfile(t, name)
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if p.Name != name {
			t.Errorf("%s: Name %q", name, p.Name)
		}
		paper := map[bool][3]int{true: {384, 32, 42}, false: {576, 48, 64}}[strings.HasSuffix(name, "-58")]
		if got := [3]int{p.Dots, p.Columns, p.ColumnsB}; got != paper {
			t.Errorf("%s: dots/columns %v, want %v", name, got, paper)
		}
		if p.CJK() != strings.HasPrefix(name, "xprinter") {
			t.Errorf("%s: CJK %v", name, p.CJK())
		}
		if p.CJK() && p.CodePage != -1 {
			t.Errorf("%s: GB18030 profile sends ESC t %d", name, p.CodePage)
		}
	}
	if p := mustProfile(t, "oneway-80"); p.Ack != AckNone {
		t.Errorf("oneway-80 ack %v, want none", p.Ack)
	}
}

// TestLookupProfileUnknown ensures the error lists the known names, so a
// config typo is fixed from the message alone.
func TestLookupProfileUnknown(t *testing.T) {
	_, err := LookupProfile("epson80")
	if err == nil || !strings.Contains(err.Error(), `unknown printer profile "epson80"`) || !strings.Contains(err.Error(), "epson-80, oneway-80, xprinter-58") {
		t.Errorf("err = %v", err)
	}
}

// TestProfileWith ensures overrides apply field by field, leave the base
// profile alone and are validated.
func TestProfileWith(t *testing.T) {
	base := mustProfile(t, "epson-80")
	cols, dots, cp := 42, 512, 19
	enc := "PC858"
	p, err := base.With(ProfileOverrides{Columns: &cols, Dots: &dots, Encoding: &enc, CodePage: &cp})
	if err != nil {
		t.Fatal(err)
	}
	if p.Columns != 42 || p.Dots != 512 || p.Encoding != "PC858" || p.CodePage != 19 || p.Beep != BeepEpson {
		t.Errorf("overridden profile %+v", p)
	}
	if base.Columns != 48 {
		t.Error("With changed the base profile")
	}
	gb := EncodingGB18030
	if p, err := base.With(ProfileOverrides{Encoding: &gb}); err != nil || !p.CJK() || p.CodePage != -1 {
		t.Errorf("switch to GB18030: %+v, %v", p, err)
	}
	// Big5 and Shift_JIS are double-byte too: Kanji mode, no ESC t, and
	// raw payloads decode with the same set.
	for enc, set := range map[string]decode.DoubleByte{EncodingBig5: decode.Big5, EncodingShiftJIS: decode.ShiftJIS} {
		p, err := base.With(ProfileOverrides{Encoding: &enc})
		if err != nil || !p.CJK() || p.CodePage != -1 {
			t.Errorf("switch to %s: %+v, %v", enc, p, err)
			continue
		}
		if o := p.DecodeOptions(); o != (decode.Options{PowerOnCJK: true, DoubleByte: set, CodeTables: decode.TablesEpson}) {
			t.Errorf("%s decodes with %+v", enc, o)
		}
	}
	bad := "KOI8"
	if _, err := base.With(ProfileOverrides{Encoding: &bad}); err == nil || !strings.Contains(err.Error(), `unknown encoding "KOI8" (want Big5, GB18030, PC437`) || !strings.Contains(err.Error(), "Shift_JIS") {
		t.Errorf("bad encoding: %v", err)
	}
	// The ESC t numbering follows the maker, and may be overridden.
	if x := mustProfile(t, "xprinter-80"); x.CodeTables != decode.TablesXprinter || x.DecodeOptions() != (decode.Options{PowerOnCJK: true, CodeTables: decode.TablesXprinter}) {
		t.Errorf("xprinter-80 decodes with %+v", x.DecodeOptions())
	}
	if base.DecodeOptions() != (decode.Options{CodeTables: decode.TablesEpson}) {
		t.Errorf("epson-80 decodes with %+v", base.DecodeOptions())
	}
	xp := "xprinter"
	if p, err := base.With(ProfileOverrides{CodeTables: &xp}); err != nil || p.CodeTables != decode.TablesXprinter {
		t.Errorf("code_tables override: %+v, %v", p, err)
	}
	star := "star"
	if _, err := base.With(ProfileOverrides{CodeTables: &star}); err == nil || !strings.Contains(err.Error(), `unknown code tables "star"`) {
		t.Errorf("bad code tables: %v", err)
	}
	zero := 0
	if _, err := base.With(ProfileOverrides{Columns: &zero}); err == nil || !strings.Contains(err.Error(), "columns 0 out of range") {
		t.Errorf("zero columns: %v", err)
	}
}

// TestProfileOverridesDecode ensures a config can spell the enum overrides
// as text, and misspellings are errors that list the choices.
func TestProfileOverridesDecode(t *testing.T) {
	var o ProfileOverrides
	if err := json.Unmarshal([]byte(`{"columns":42,"beep":"clone","cutter":"partial","ack":"process-id"}`), &o); err != nil {
		t.Fatal(err)
	}
	if *o.Columns != 42 || *o.Beep != BeepClone || *o.Cutter != CutterPartialOnly || *o.Ack != AckProcessID {
		t.Errorf("decoded %+v", o)
	}
	err := json.Unmarshal([]byte(`{"beep":"loud"}`), &o)
	if err == nil || !strings.Contains(err.Error(), "none, epson, clone") {
		t.Errorf("bad beep: %v", err)
	}
	for _, a := range []AckMode{AckNone, AckRealTime, AckTransmit, AckProcessID} {
		var back AckMode
		if err := back.UnmarshalText([]byte(a.String())); err != nil || back != a {
			t.Errorf("ack %v round trip: %v %v", a, back, err)
		}
	}
}
