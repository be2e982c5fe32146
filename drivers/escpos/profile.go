package escpos

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"printgate/drivers/escpos/decode"

	"golang.org/x/text/encoding/charmap"
)

// Profile describes one kind of printer: everything the renderer needs to lay
// a ticket out (width, columns, character encoding) and what the session may
// expect from it (beeper dialect, cutter, how it can confirm a job). Configs
// name a built-in profile and may override fields (see With).
type Profile struct {
	// Name is the built-in name this profile came from, e.g. "epson-80".
	Name string
	// Dots is the printable width in dots (8 dots/mm): 384 for 58 mm paper,
	// 576 for 80 mm. Images are scaled to fit it.
	Dots int
	// Columns is the number of font A characters per line (single width).
	Columns int
	// ColumnsB is the same for font B; informational, the renderer uses font A.
	ColumnsB int
	// Encoding is how text bytes are produced: a double-byte set sent in
	// Kanji mode (FS &), "GB18030" (Chinese printers), "Big5" (Taiwanese
	// and Hong Kong firmware) or "Shift_JIS" (Japanese firmware), or a
	// single-byte code page sent after FS .: "PC437", "PC850", "PC858",
	// "PC866" or "WPC1252".
	Encoding string
	// CodePage is the ESC t number of Encoding on this printer, or -1 to send
	// no ESC t (GB18030 profiles, which need none). Numbering differs between
	// makers, which is why it is a field and not derived from Encoding.
	CodePage int
	// CodeTables is the maker's ESC t numbering the printer reads: what
	// a POS's own ESC t n selects, for the previews and `printgate decode`
	// of raw payloads. Empty means Epson's.
	CodeTables decode.CodeTables
	// Beep is how to sound the buzzer.
	Beep BeepDialect
	// Cutter is what the autocutter can do.
	Cutter Cutter
	// Ack is the strongest completion proof this kind of printer is expected
	// to give. It is a hint: the session still probes each printer.
	Ack AckMode
}

// BeepDialect says which buzzer command a printer understands.
type BeepDialect int

// Beep dialects.
const (
	BeepNone  BeepDialect = iota // no buzzer: beep lines are skipped
	BeepEpson                    // ESC ( A fn48
	BeepClone                    // ESC B n t
)

// Cutter says which cuts the printer can make.
type Cutter int

// Cutter kinds.
const (
	CutterFull        Cutter = iota // full and partial cuts
	CutterPartialOnly               // full cuts are sent as partial cuts
	CutterNone                      // no autocutter: cuts become a feed to the tear bar
)

// AckMode is how strongly a printer can confirm a job (docs/ESCPOS.md §2).
type AckMode int

// Ack modes, weakest first.
const (
	AckNone      AckMode = iota // one-way: only "the transport took the bytes"
	AckRealTime                 // answers DLE EOT: health before and after
	AckTransmit                 // answers GS r in order: "consumed"
	AckProcessID                // may answer GS ( H after printing: "printed"
)

var (
	beepNames   = []string{BeepNone: "none", BeepEpson: "epson", BeepClone: "clone"}
	cutterNames = []string{CutterFull: "full", CutterPartialOnly: "partial", CutterNone: "none"}
	ackNames    = []string{AckNone: "none", AckRealTime: "realtime", AckTransmit: "transmit", AckProcessID: "process-id"}
)

func enumString(names []string, v int, typ string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

func enumParse(names []string, s, what string) (int, error) {
	for i, n := range names {
		if n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", what, s, strings.Join(names, ", "))
}

// String returns the config spelling: none, epson or clone.
func (b BeepDialect) String() string { return enumString(beepNames, int(b), "BeepDialect") }

// MarshalText implements encoding.TextMarshaler for configs.
func (b BeepDialect) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler for configs.
func (b *BeepDialect) UnmarshalText(t []byte) error {
	v, err := enumParse(beepNames, string(t), "beep dialect")
	*b = BeepDialect(v)
	return err
}

// String returns the config spelling: full, partial or none.
func (c Cutter) String() string { return enumString(cutterNames, int(c), "Cutter") }

// MarshalText implements encoding.TextMarshaler for configs.
func (c Cutter) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler for configs.
func (c *Cutter) UnmarshalText(t []byte) error {
	v, err := enumParse(cutterNames, string(t), "cutter")
	*c = Cutter(v)
	return err
}

// Confirmation is the strongest completion proof a printer of this ack mode
// can give, what DeviceOptions.Expected takes: ConfirmPrinted for
// AckProcessID, ConfirmConsumed for AckTransmit, else ConfirmDelivered.
func (a AckMode) Confirmation() Confirmation {
	switch a {
	case AckProcessID:
		return ConfirmPrinted
	case AckTransmit:
		return ConfirmConsumed
	}
	return ConfirmDelivered
}

// String returns the config spelling: none, realtime, transmit or process-id.
func (a AckMode) String() string { return enumString(ackNames, int(a), "AckMode") }

// MarshalText implements encoding.TextMarshaler for configs.
func (a AckMode) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler for configs.
func (a *AckMode) UnmarshalText(t []byte) error {
	v, err := enumParse(ackNames, string(t), "ack mode")
	*a = AckMode(v)
	return err
}

// The double-byte Encodings, one per printer firmware's Kanji mode set.
const (
	// EncodingGB18030 is the Encoding of mainland Chinese printers.
	EncodingGB18030 = "GB18030"
	// EncodingBig5 is the Encoding of traditional Chinese firmware.
	EncodingBig5 = "Big5"
	// EncodingShiftJIS is the Encoding of Japanese firmware.
	EncodingShiftJIS = "Shift_JIS"
)

// doubleByteSet is what the agent knows of one double-byte Encoding.
type doubleByteSet struct {
	set decode.DoubleByte // the decoder's set, whose codec the renderer uses too
	// banners are the banners' second lines in the set's language:
	// possible duplicate, reprint, incomplete job.
	banners [3]string
	// language and samples name the set's language and a few common
	// characters of it (the plain ideograph, the forms only one script
	// uses, kana), which a backup printer of another set may lack.
	language, samples string
}

// doubleByte describes the double-byte Encodings by name.
var doubleByte = map[string]doubleByteSet{
	EncodingGB18030:  {decode.GB18030, [3]string{"可能重复", "补打", "接收不完整"}, "Chinese", "中这们说过"},
	EncodingBig5:     {decode.Big5, [3]string{"可能重複", "補印", "接收不完整"}, "traditional Chinese", "中這們說過"},
	EncodingShiftJIS: {decode.ShiftJIS, [3]string{"重複の可能性", "再印刷", "受信不完全"}, "Japanese", "中説あア"},
}

// singleByte maps the supported single-byte Encoding names to their tables.
var singleByte = map[string]*charmap.Charmap{
	"PC437":   charmap.CodePage437,
	"PC850":   charmap.CodePage850,
	"PC858":   charmap.CodePage858,
	"PC866":   charmap.CodePage866,
	"WPC1252": charmap.Windows1252,
}

// CJK reports whether the profile prints text in Kanji mode (FS &), in one
// of the double-byte Encodings.
func (p Profile) CJK() bool {
	_, ok := doubleByte[p.Encoding]
	return ok
}

// DecodeOptions describes the printer to the stream decoder: its power-on
// double-byte mode, the set that mode reads and its ESC t numbering, so a
// raw payload previews as this printer prints it.
func (p Profile) DecodeOptions() decode.Options {
	return decode.Options{PowerOnCJK: p.CJK(), DoubleByte: doubleByte[p.Encoding].set, CodeTables: p.CodeTables}
}

var builtinProfiles = map[string]Profile{
	// Epson TM-T20/T82/T88 class on 80 mm paper.
	"epson-80": {Name: "epson-80", CodeTables: decode.TablesEpson, Dots: 576, Columns: 48, ColumnsB: 64, Encoding: "WPC1252", CodePage: 16,
		Beep: BeepEpson, Cutter: CutterFull, Ack: AckProcessID},
	// The same printers set to 58 mm paper.
	"epson-58": {Name: "epson-58", CodeTables: decode.TablesEpson, Dots: 384, Columns: 32, ColumnsB: 42, Encoding: "WPC1252", CodePage: 16,
		Beep: BeepEpson, Cutter: CutterFull, Ack: AckProcessID},
	// Xprinter XP-80 class: Chinese firmware, GB18030, clone buzzer.
	"xprinter-80": {Name: "xprinter-80", CodeTables: decode.TablesXprinter, Dots: 576, Columns: 48, ColumnsB: 64, Encoding: EncodingGB18030, CodePage: -1,
		Beep: BeepClone, Cutter: CutterFull, Ack: AckTransmit},
	// Xprinter XP-58 class: usually no autocutter, answers DLE EOT only.
	"xprinter-58": {Name: "xprinter-58", CodeTables: decode.TablesXprinter, Dots: 384, Columns: 32, ColumnsB: 42, Encoding: EncodingGB18030, CodePage: -1,
		Beep: BeepClone, Cutter: CutterNone, Ack: AckRealTime},
	// Any 80 mm printer reached one way (parallel, Windows spooler, unknown
	// clone): PC437 is the one table every ESC/POS printer has at 0, and a
	// partial cut is the one every cutter makes.
	"oneway-80": {Name: "oneway-80", CodeTables: decode.TablesEpson, Dots: 576, Columns: 48, ColumnsB: 64, Encoding: "PC437", CodePage: 0,
		Beep: BeepNone, Cutter: CutterPartialOnly, Ack: AckNone},
}

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(builtinProfiles))
	for n := range builtinProfiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupProfile returns the built-in profile called name.
func LookupProfile(name string) (Profile, error) {
	p, ok := builtinProfiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown printer profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// ProfileOverrides are per-printer corrections to a built-in profile, as a
// config gives them inline. Nil fields keep the profile's value. The enum
// fields decode from their text spelling (e.g. beep = "clone").
type ProfileOverrides struct {
	Dots     *int    `toml:"dots" json:"dots,omitempty"`
	Columns  *int    `toml:"columns" json:"columns,omitempty"`
	ColumnsB *int    `toml:"columns_b" json:"columns_b,omitempty"`
	Encoding *string `toml:"encoding" json:"encoding,omitempty"`
	CodePage *int    `toml:"code_page" json:"code_page,omitempty"`
	// CodeTables is the ESC t numbering: "epson" or "xprinter".
	CodeTables *string      `toml:"code_tables" json:"code_tables,omitempty"`
	Beep       *BeepDialect `toml:"beep" json:"beep,omitempty"`
	Cutter     *Cutter      `toml:"cutter" json:"cutter,omitempty"`
	Ack        *AckMode     `toml:"ack" json:"ack,omitempty"`
}

// With returns p with the non-nil overrides applied, or an error if the
// result is not a usable profile. p itself is not changed.
func (p Profile) With(o ProfileOverrides) (Profile, error) {
	if o.Dots != nil {
		p.Dots = *o.Dots
	}
	if o.Columns != nil {
		p.Columns = *o.Columns
	}
	if o.ColumnsB != nil {
		p.ColumnsB = *o.ColumnsB
	}
	if o.Encoding != nil {
		p.Encoding = *o.Encoding
		if p.CJK() && o.CodePage == nil {
			p.CodePage = -1
		}
	}
	if o.CodePage != nil {
		p.CodePage = *o.CodePage
	}
	if o.CodeTables != nil {
		p.CodeTables = decode.CodeTables(*o.CodeTables)
	}
	if o.Beep != nil {
		p.Beep = *o.Beep
	}
	if o.Cutter != nil {
		p.Cutter = *o.Cutter
	}
	if o.Ack != nil {
		p.Ack = *o.Ack
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// Validate reports whether the renderer can use p.
func (p Profile) Validate() error {
	var errs []error
	if p.Dots < 64 || p.Dots > 2048 {
		errs = append(errs, fmt.Errorf("dots %d out of range 64..2048", p.Dots))
	}
	if p.Columns < 8 || p.Columns > 255 {
		errs = append(errs, fmt.Errorf("columns %d out of range 8..255", p.Columns))
	}
	if p.ColumnsB < 0 || p.ColumnsB > 255 {
		errs = append(errs, fmt.Errorf("columns_b %d out of range 0..255", p.ColumnsB))
	}
	if _, ok := singleByte[p.Encoding]; !ok && !p.CJK() {
		var names []string
		for n := range doubleByte {
			names = append(names, n)
		}
		for n := range singleByte {
			names = append(names, n)
		}
		sort.Strings(names)
		errs = append(errs, fmt.Errorf("unknown encoding %q (want %s)", p.Encoding, strings.Join(names, ", ")))
	}
	if p.CodePage < -1 || p.CodePage > 255 {
		errs = append(errs, fmt.Errorf("code page %d out of range 0..255 (or -1 for none)", p.CodePage))
	}
	if !decode.KnownCodeTables(p.CodeTables) {
		errs = append(errs, fmt.Errorf("unknown code tables %q (want %q or %q)", p.CodeTables, decode.TablesEpson, decode.TablesXprinter))
	}
	if p.Beep < BeepNone || p.Beep > BeepClone {
		errs = append(errs, fmt.Errorf("unknown beep dialect %d", p.Beep))
	}
	if p.Cutter < CutterFull || p.Cutter > CutterNone {
		errs = append(errs, fmt.Errorf("unknown cutter %d", p.Cutter))
	}
	if p.Ack < AckNone || p.Ack > AckProcessID {
		errs = append(errs, fmt.Errorf("unknown ack mode %d", p.Ack))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("profile %q: %w", p.Name, err)
	}
	return nil
}
