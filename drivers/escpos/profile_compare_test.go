package escpos_test

import (
	"strings"
	"testing"

	"printgate/drivers/escpos"
)

// topics returns the topic of each CompareProfiles sentence (the word
// before the first colon).
func topics(sentences []string) []string {
	out := make([]string, len(sentences))
	for i, s := range sentences {
		out[i], _, _ = strings.Cut(s, ":")
	}
	return out
}

// TestCompareProfiles ensures every shortfall of a backup against its
// primary gets its own sentence, and a backup that can print everything
// the primary can (the same profile, wider paper, a stronger printer of the
// same encoding) gets none.
func TestCompareProfiles(t *testing.T) {
	cases := []struct {
		primary, backup string
		topics          []string
		says            []string // substrings the sentences must hold
	}{
		{"epson-80", "epson-80", nil, nil},
		{"epson-58", "epson-80", nil, nil},
		{"xprinter-58", "xprinter-80", nil, nil},
		{"epson-80", "epson-58", []string{"paper"}, []string{"384 dots, 32 columns", "576 dots, 48 columns"}},
		{"xprinter-80", "epson-80", []string{"encoding"}, []string{"WPC1252", "Chinese", `"?"`}},
		{"epson-80", "oneway-80",
			[]string{"encoding", "cutter", "buzzer", "confirmation", "status"},
			[]string{"PC437", "WPC1252", "Š", "only partially", `"delivered" (the primary: "printed")`, "one-way"}},
		{"epson-80", "xprinter-58",
			[]string{"encoding", "paper", "cutter", "confirmation"},
			[]string{"GB18030", "no cutter", "torn off"}},
		{"oneway-80", "epson-80", []string{"encoding"}, []string{"░"}},
	}
	for _, tc := range cases {
		got := escpos.CompareProfiles(profile(t, tc.primary), profile(t, tc.backup))
		if strings.Join(topics(got), ",") != strings.Join(tc.topics, ",") {
			t.Errorf("%s -> %s: topics %q, want %q\n%s", tc.primary, tc.backup, topics(got), tc.topics, strings.Join(got, "\n"))
			continue
		}
		all := strings.Join(got, "\n")
		for _, s := range tc.says {
			if !strings.Contains(all, s) {
				t.Errorf("%s -> %s: %q lacks %q", tc.primary, tc.backup, all, s)
			}
		}
	}
}

// TestCompareProfilesOverrides ensures overridden fields count, not just
// the built-in names: an epson-80 backup overridden to PC858 lacks the
// characters WPC1252 has and PC858 does not, and one overridden to no
// cutter says so.
func TestCompareProfilesOverrides(t *testing.T) {
	enc, cut := "PC858", escpos.CutterNone
	backup, err := profile(t, "epson-80").With(escpos.ProfileOverrides{Encoding: &enc, Cutter: &cut})
	if err != nil {
		t.Fatal(err)
	}
	got := escpos.CompareProfiles(profile(t, "epson-80"), backup)
	if strings.Join(topics(got), ",") != "encoding,cutter" {
		t.Fatalf("topics %q, want encoding,cutter:\n%s", topics(got), strings.Join(got, "\n"))
	}
	if !strings.Contains(got[0], "PC858") || !strings.Contains(got[0], "Š") {
		t.Errorf("encoding sentence %q does not name PC858 and a missing character", got[0])
	}
}

// TestCompareProfilesDoubleByte ensures a backup with another double-byte
// set is told apart by the characters it lacks: simplified forms on a Big5
// backup, traditional ones on a Japanese one, kana on a Latin one; and a
// set that holds all of them (GB18030 has the traditional forms) is fine.
func TestCompareProfilesDoubleByte(t *testing.T) {
	with := func(name, enc string) escpos.Profile {
		p, err := profile(t, name).With(escpos.ProfileOverrides{Encoding: &enc})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	big5, sjis := with("xprinter-80", escpos.EncodingBig5), with("xprinter-80", escpos.EncodingShiftJIS)
	cases := []struct {
		primary, backup escpos.Profile
		says            string // "" for no sentence
	}{
		{profile(t, "xprinter-80"), big5, "Big5, which lacks Chinese characters of the primary's GB18030 (这 们 说 过)"},
		{big5, profile(t, "xprinter-80"), ""},
		{big5, sjis, "Shift_JIS, which lacks traditional Chinese characters of the primary's Big5 (說)"},
		{sjis, profile(t, "epson-80"), "WPC1252, which lacks Japanese characters of the primary's Shift_JIS (中 説 あ ア)"},
		{sjis, profile(t, "xprinter-80"), ""},
	}
	for _, tc := range cases {
		got := strings.Join(escpos.CompareProfiles(tc.primary, tc.backup), "\n")
		if tc.says == "" && got != "" || !strings.Contains(got, tc.says) {
			t.Errorf("%s -> %s: %q, want %q", tc.primary.Encoding, tc.backup.Encoding, got, tc.says)
		}
	}
}
