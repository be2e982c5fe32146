package escpos

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"printgate/internal/suggest"
)

// Document is a ticket document (PROTOCOL.md §4): printer-independent lines
// that Render turns into ESC/POS for one Profile. Parse documents from JSON
// with ParseDocument (json.Unmarshal into a Document is equally strict);
// MarshalJSON writes the same format back.
type Document struct {
	Lines []Line
}

// Line is one line of a Document. It is one of TextLine, RuleLine, QRLine,
// BarcodeLine, ImageLine, FeedLine, BeepLine, DrawerLine or CutLine.
type Line interface {
	// kind is the JSON key that names the line's kind; unexported so that the
	// set of kinds stays closed.
	kind() string
}

// TextLine prints text, wrapped at the paper width. Control characters are
// removed; "\n" starts a new row.
type TextLine struct {
	Text      string
	Align     Align
	Size      TextSize // the zero value means 1x1
	Bold      bool
	Underline bool
	// Right, if not empty, is printed right-aligned on the first row of Text
	// (e.g. a quantity or a price); Text then wraps in the space left of it.
	// It cannot be combined with an Align other than left.
	Right string
}

// TextSize is a character magnification: W columns wide, H rows high, each
// 1..8. The zero value means 1x1.
type TextSize struct{ W, H int }

// RuleLine prints one character repeated across the paper width.
type RuleLine struct{ Char string }

// QRLine prints Data as a QR code drawn by the printer. Size is the module
// size in dots (1..16); 0 means DefaultQRSize.
type QRLine struct {
	Data string
	Size int
}

// BarcodeLine prints Data as a 1D barcode with its text below it. The zero
// Type means CODE128.
type BarcodeLine struct {
	Data string
	Type Symbology
}

// ImageLine prints a PNG image, scaled down to the paper width if wider and
// dithered to black and white.
type ImageLine struct{ PNG []byte }

// FeedLine feeds Lines (1..255) blank lines.
type FeedLine struct{ Lines int }

// BeepLine sounds the buzzer Times (1..9) times, if the printer has one.
type BeepLine struct{ Times int }

// DrawerLine opens the cash drawer. It is the only way a document can.
type DrawerLine struct{}

// CutLine feeds the paper to the cutter and cuts.
type CutLine struct{ Kind CutKind }

func (TextLine) kind() string    { return "text" }
func (RuleLine) kind() string    { return "rule" }
func (QRLine) kind() string      { return "qr" }
func (BarcodeLine) kind() string { return "barcode" }
func (ImageLine) kind() string   { return "image" }
func (FeedLine) kind() string    { return "feed" }
func (BeepLine) kind() string    { return "beep" }
func (DrawerLine) kind() string  { return "drawer" }
func (CutLine) kind() string     { return "cut" }

// Limits that keep one document from tying up a printer or the agent.
const (
	// DefaultQRSize is the QR module size used when a line gives none.
	DefaultQRSize = 6
	// MaxLines is the most lines a document may have.
	MaxLines = 5000
	// MaxImagePixels bounds a PNG's width×height before decoding, so a tiny
	// file cannot expand into gigabytes.
	MaxImagePixels = 2048 * 2048
	// MaxImageHeight is the most dot rows an image may print (30 cm).
	MaxImageHeight = 2400
	// MaxDocumentPixels bounds the width×height of all of a document's
	// images together: rendering decodes, scales and dithers every pixel
	// in the printer's lane, and a document of a hundred 2048×2048 images
	// held it for most of a minute. Four images of the largest size fit.
	MaxDocumentPixels = 4 * MaxImagePixels
	// MaxFeedLines is the most blank lines feed lines may add up to in one
	// document (about 2 m of paper).
	MaxFeedLines = 500
)

// kindKeys are the keys that name a line's kind, in PROTOCOL.md order; extra
// lists the other keys each kind allows.
var (
	kindKeys = []string{"text", "rule", "qr", "barcode", "image", "feed", "beep", "drawer", "cut"}
	extra    = map[string][]string{
		"text":    {"align", "size", "bold", "underline", "right"},
		"qr":      {"size"},
		"barcode": {"type"},
	}
)

// ParseDocument reads a ticket document strictly: unknown or repeated keys,
// wrong types, lines that are not exactly one kind and out-of-range values are
// errors that name the line ("line 3: qr size 20 out of range 1..16"). The
// returned document has passed Validate.
func ParseDocument(data []byte) (*Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	top, err := readObject(dec)
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("document: unexpected data after the closing brace")
	}
	for _, k := range top.keys {
		if k != "lines" {
			return nil, fmt.Errorf("document: unknown key %q (want lines)", k)
		}
	}
	raw, ok := top.vals["lines"]
	if !ok || isNull(raw) {
		return nil, errors.New("document: missing lines")
	}
	var rawLines []json.RawMessage
	if err := json.Unmarshal(raw, &rawLines); err != nil {
		return nil, errors.New("document: lines must be an array of objects")
	}
	if len(rawLines) > MaxLines {
		return nil, fmt.Errorf("document: %d lines, more than %d", len(rawLines), MaxLines)
	}
	doc := &Document{Lines: make([]Line, 0, len(rawLines))}
	for i, r := range rawLines {
		l, err := parseLine(r)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		doc.Lines = append(doc.Lines, l)
	}
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	return doc, nil
}

// UnmarshalJSON parses like ParseDocument.
func (d *Document) UnmarshalJSON(data []byte) error {
	p, err := ParseDocument(data)
	if err != nil {
		return err
	}
	*d = *p
	return nil
}

// object is a JSON object with its keys in order.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

// readObject reads one JSON object from dec, rejecting repeated keys (which
// encoding/json would otherwise resolve silently to the last one).
func readObject(dec *json.Decoder) (object, error) {
	o := object{vals: map[string]json.RawMessage{}}
	tok, err := dec.Token()
	if err != nil {
		return o, fmt.Errorf("not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return o, errors.New("must be a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return o, fmt.Errorf("not valid JSON: %w", err)
		}
		k, ok := tok.(string)
		if !ok {
			return o, errors.New("not valid JSON: expected a key")
		}
		if _, dup := o.vals[k]; dup {
			return o, fmt.Errorf("key %q appears twice", k)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return o, fmt.Errorf("not valid JSON after key %q: %w", k, err)
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return o, fmt.Errorf("not valid JSON: %w", err)
	}
	return o, nil
}

// allKeys is every key a line may have, kinds first.
func allKeys() []string {
	keys := append([]string(nil), kindKeys...)
	for _, k := range kindKeys {
		for _, e := range extra[k] {
			if !slices.Contains(keys, e) {
				keys = append(keys, e)
			}
		}
	}
	return keys
}

// unknownKey names a key the line does not take (where: " for a text
// line", or ""), with the one of candidates it is likely a typo of:
// `unknown key "txt"; did you mean "text"?`.
func unknownKey(k, where string, candidates []string) string {
	if s := suggest.Closest(k, candidates); s != "" {
		return fmt.Sprintf("unknown key %q%s; did you mean %q?", k, where, s)
	}
	return fmt.Sprintf("unknown key %q%s", k, where)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func parseLine(raw json.RawMessage) (Line, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	o, err := readObject(dec)
	if err != nil {
		return nil, err
	}
	var kinds []string
	for _, k := range kindKeys {
		if _, ok := o.vals[k]; ok {
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 0:
		if len(o.keys) > 0 {
			// A misspelled kind ("txt") is the likely cause: name it.
			return nil, fmt.Errorf("%s (a line needs one of %s)", unknownKey(o.keys[0], "", allKeys()), strings.Join(kindKeys, ", "))
		}
		return nil, fmt.Errorf("no content: a line needs one of %s", strings.Join(kindKeys, ", "))
	case 1:
	default:
		return nil, fmt.Errorf("has both %s and %s: a line is exactly one kind", kinds[0], kinds[1])
	}
	kind := kinds[0]
	for _, k := range o.keys {
		if k == kind {
			continue
		}
		allowed := false
		for _, a := range extra[kind] {
			allowed = allowed || a == k
		}
		if !allowed {
			return nil, errors.New(unknownKey(k, " for a "+kind+" line", extra[kind]))
		}
	}
	v := o.vals
	switch kind {
	case "text":
		var l TextLine
		if err := getString(v, "text", &l.Text); err != nil {
			return nil, err
		}
		if err := getString(v, "right", &l.Right); err != nil {
			return nil, err
		}
		if err := getBool(v, "bold", &l.Bold); err != nil {
			return nil, err
		}
		if err := getBool(v, "underline", &l.Underline); err != nil {
			return nil, err
		}
		var align, size string
		if err := getString(v, "align", &align); err != nil {
			return nil, err
		}
		if _, ok := v["align"]; ok {
			if l.Align, err = parseAlign(align); err != nil {
				return nil, err
			}
		}
		if err := getString(v, "size", &size); err != nil {
			return nil, err
		}
		if _, ok := v["size"]; ok {
			if l.Size, err = ParseTextSize(size); err != nil {
				return nil, err
			}
		}
		return l, nil
	case "rule":
		var l RuleLine
		return l, getString(v, "rule", &l.Char)
	case "qr":
		var l QRLine
		if err := getString(v, "qr", &l.Data); err != nil {
			return nil, err
		}
		if _, ok := v["size"]; ok {
			if err := getInt(v, "size", &l.Size); err != nil {
				return nil, err
			}
			if l.Size == 0 {
				// 0 would silently mean "default"; say what is allowed instead.
				return nil, fmt.Errorf("qr size 0 out of range 1..16")
			}
		}
		return l, nil
	case "barcode":
		l := BarcodeLine{Type: CODE128}
		if err := getString(v, "barcode", &l.Data); err != nil {
			return nil, err
		}
		if _, ok := v["type"]; ok {
			var t string
			if err := getString(v, "type", &t); err != nil {
				return nil, err
			}
			if l.Type, err = ParseSymbology(t); err != nil {
				return nil, err
			}
		}
		return l, nil
	case "image":
		var s string
		if err := getString(v, "image", &s); err != nil {
			return nil, err
		}
		// Browsers hand out data URLs; accept them rather than make every
		// integrator strip the prefix.
		s = strings.TrimPrefix(s, "data:image/png;base64,")
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("image is not base64: %w", err)
		}
		return ImageLine{PNG: b}, nil
	case "feed":
		var l FeedLine
		return l, getInt(v, "feed", &l.Lines)
	case "beep":
		var l BeepLine
		return l, getInt(v, "beep", &l.Times)
	case "drawer":
		var b bool
		if err := getBool(v, "drawer", &b); err != nil {
			return nil, err
		}
		if !b {
			return nil, errors.New("drawer must be true (leave the line out to keep the drawer shut)")
		}
		return DrawerLine{}, nil
	case "cut":
		var s string
		if err := getString(v, "cut", &s); err != nil {
			return nil, err
		}
		switch s {
		case "full":
			return CutLine{Kind: CutFull}, nil
		case "partial":
			return CutLine{Kind: CutPartial}, nil
		}
		return nil, fmt.Errorf("cut %q: want full or partial", s)
	}
	return nil, fmt.Errorf("unhandled kind %s", kind)
}

func getString(v map[string]json.RawMessage, k string, dst *string) error {
	raw, ok := v[k]
	if !ok {
		return nil
	}
	if isNull(raw) || json.Unmarshal(raw, dst) != nil {
		return fmt.Errorf("%s must be a string", k)
	}
	return nil
}

func getBool(v map[string]json.RawMessage, k string, dst *bool) error {
	raw, ok := v[k]
	if !ok {
		return nil
	}
	if isNull(raw) || json.Unmarshal(raw, dst) != nil {
		return fmt.Errorf("%s must be true or false", k)
	}
	return nil
}

func getInt(v map[string]json.RawMessage, k string, dst *int) error {
	raw, ok := v[k]
	if !ok {
		return nil
	}
	if isNull(raw) || json.Unmarshal(raw, dst) != nil {
		return fmt.Errorf("%s must be a whole number", k)
	}
	return nil
}

func parseAlign(s string) (Align, error) {
	switch s {
	case "left":
		return AlignLeft, nil
	case "center":
		return AlignCenter, nil
	case "right":
		return AlignRight, nil
	}
	return 0, fmt.Errorf("align %q: want left, center or right", s)
}

// ParseTextSize reads "WxH" with W and H in 1..8, e.g. "2x2".
func ParseTextSize(s string) (TextSize, error) {
	if len(s) == 3 && s[1] == 'x' && s[0] >= '1' && s[0] <= '8' && s[2] >= '1' && s[2] <= '8' {
		return TextSize{W: int(s[0] - '0'), H: int(s[2] - '0')}, nil
	}
	return TextSize{}, fmt.Errorf("size %q: want WxH with W and H in 1..8, e.g. 2x2", s)
}

// String returns "WxH"; the zero value prints as "1x1".
func (s TextSize) String() string {
	s = s.norm()
	return fmt.Sprintf("%dx%d", s.W, s.H)
}

// norm turns the zero value into 1x1.
func (s TextSize) norm() TextSize {
	if s == (TextSize{}) {
		return TextSize{1, 1}
	}
	return s
}

// Validate checks every line's values, as Render needs them, and names the
// first bad line. Documents built in Go (a test print, a pairing ticket)
// get the same checks as parsed ones.
func (d *Document) Validate() error {
	if d == nil || len(d.Lines) == 0 {
		return errors.New("document has no lines")
	}
	return d.validateLines()
}

// validateLines is Validate without the emptiness check: Render accepts an
// empty document (banners only), intake does not.
func (d *Document) validateLines() error {
	if d == nil {
		return nil
	}
	if len(d.Lines) > MaxLines {
		return fmt.Errorf("document: %d lines, more than %d", len(d.Lines), MaxLines)
	}
	feeds, pixels := 0, 0
	for i, l := range d.Lines {
		if err := validateLine(l); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		if im, ok := l.(ImageLine); ok {
			cfg, _ := png.DecodeConfig(bytes.NewReader(im.PNG)) // validateLine read it
			if pixels += cfg.Width * cfg.Height; pixels > MaxDocumentPixels {
				return fmt.Errorf("line %d: images add up to %d pixels, more than the %d a document may hold (%d at 2048×2048); send fewer or smaller images", i+1, pixels, MaxDocumentPixels, MaxDocumentPixels/MaxImagePixels)
			}
		}
		if f, ok := l.(FeedLine); ok {
			if feeds += f.Lines; feeds > MaxFeedLines {
				return fmt.Errorf("line %d: feeds add up to %d lines, more than %d", i+1, feeds, MaxFeedLines)
			}
		}
	}
	return nil
}

func validateLine(l Line) error {
	switch l := l.(type) {
	case TextLine:
		if l.Align > AlignRight {
			return fmt.Errorf("align %d out of range", l.Align)
		}
		if s := l.Size; s != (TextSize{}) && (s.W < 1 || s.W > 8 || s.H < 1 || s.H > 8) {
			return fmt.Errorf("size %dx%d out of range 1x1..8x8", s.W, s.H)
		}
		if l.Right != "" && l.Align != AlignLeft {
			return fmt.Errorf("right cannot be combined with align %v", l.Align)
		}
	case RuleLine:
		c := cleanText(l.Char)
		if utf8.RuneCountInString(c) != 1 || c == "\n" {
			return fmt.Errorf("rule %q: want exactly one printable character", l.Char)
		}
	case QRLine:
		if l.Size != 0 && (l.Size < 1 || l.Size > 16) {
			return fmt.Errorf("qr size %d out of range 1..16", l.Size)
		}
		data := cleanQR(l.Data)
		if data == "" {
			return errors.New("qr has no data")
		}
		if max := qrCapacity[qrLevel]; len(data) > max {
			return fmt.Errorf("qr data is %d bytes, more than the %d a QR code holds", len(data), max)
		}
		if err := qrLengthSafe(len(data) + 3); err != nil {
			return err
		}
	case BarcodeLine:
		t := l.Type
		if t == 0 {
			t = CODE128
		}
		if err := ValidateBarcode(t, l.Data); err != nil {
			return err
		}
	case ImageLine:
		cfg, err := png.DecodeConfig(bytes.NewReader(l.PNG))
		if err != nil {
			return fmt.Errorf("image is not a PNG: %w", err)
		}
		if cfg.Width < 1 || cfg.Height < 1 || cfg.Width*cfg.Height > MaxImagePixels {
			return fmt.Errorf("image is %dx%d pixels, more than %d in all", cfg.Width, cfg.Height, MaxImagePixels)
		}
	case FeedLine:
		if l.Lines < 1 || l.Lines > 255 {
			return fmt.Errorf("feed %d out of range 1..255", l.Lines)
		}
	case BeepLine:
		if l.Times < 1 || l.Times > 9 {
			return fmt.Errorf("beep %d out of range 1..9", l.Times)
		}
	case DrawerLine:
	case CutLine:
		if l.Kind > CutPartial {
			return fmt.Errorf("cut kind %d unknown", l.Kind)
		}
	case nil:
		return errors.New("empty line")
	default:
		return fmt.Errorf("unknown line type %T", l)
	}
	return nil
}

// MarshalJSON writes the document in the PROTOCOL.md §4 format, leaving out
// fields at their default, so that ParseDocument reads back the same lines.
func (d Document) MarshalJSON() ([]byte, error) {
	lines := make([]any, len(d.Lines))
	for i, l := range d.Lines {
		switch l := l.(type) {
		case TextLine:
			t := struct {
				Text      string `json:"text"`
				Align     string `json:"align,omitempty"`
				Size      string `json:"size,omitempty"`
				Bold      bool   `json:"bold,omitempty"`
				Underline bool   `json:"underline,omitempty"`
				Right     string `json:"right,omitempty"`
			}{Text: l.Text, Bold: l.Bold, Underline: l.Underline, Right: l.Right}
			if l.Align != AlignLeft {
				t.Align = l.Align.String()
			}
			if l.Size != (TextSize{}) {
				t.Size = l.Size.String()
			}
			lines[i] = t
		case RuleLine:
			lines[i] = map[string]string{"rule": l.Char}
		case QRLine:
			lines[i] = struct {
				QR   string `json:"qr"`
				Size int    `json:"size,omitempty"`
			}{l.Data, l.Size}
		case BarcodeLine:
			t := l.Type
			if t == 0 {
				t = CODE128
			}
			lines[i] = struct {
				Barcode string `json:"barcode"`
				Type    string `json:"type"`
			}{l.Data, t.String()}
		case ImageLine:
			lines[i] = map[string]string{"image": base64.StdEncoding.EncodeToString(l.PNG)}
		case FeedLine:
			lines[i] = map[string]int{"feed": l.Lines}
		case BeepLine:
			lines[i] = map[string]int{"beep": l.Times}
		case DrawerLine:
			lines[i] = map[string]bool{"drawer": true}
		case CutLine:
			lines[i] = map[string]string{"cut": l.Kind.String()}
		default:
			return nil, fmt.Errorf("line %d: cannot marshal %T", i+1, l)
		}
	}
	return json.Marshal(struct {
		Lines []any `json:"lines"`
	}{lines})
}
