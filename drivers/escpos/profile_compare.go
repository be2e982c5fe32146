package escpos

import (
	"fmt"
	"strings"
	"unicode"
)

// maxExamples is how many missing characters a CompareProfiles sentence
// shows.
const maxExamples = 8

// CompareProfiles returns one sentence for each thing a printer of profile
// backup cannot do that one of profile primary can, so that `printgate run`
// can warn at start, before a failover prints a ticket badly: characters its
// encoding lacks (they would print as "?"), narrower paper, a missing or
// weaker cutter, no buzzer, a weaker completion proof, no status answers.
// Each sentence starts with its topic ("encoding:", "paper:", "cutter:",
// "buzzer:", "confirmation:", "status:"). It returns nil when the backup can
// print everything the primary can. Profiles do not describe QR, barcode or
// drawer support, so those are not compared.
func CompareProfiles(primary, backup Profile) []string {
	var out []string
	if s := compareEncodings(primary, backup); s != "" {
		out = append(out, s)
	}
	if backup.Dots < primary.Dots || backup.Columns < primary.Columns {
		out = append(out, fmt.Sprintf("paper: the backup's paper is narrower (%d dots, %d columns; the primary's %d dots, %d columns): text wraps sooner, images and QR codes shrink, a long barcode may not fit",
			backup.Dots, backup.Columns, primary.Dots, primary.Columns))
	}
	switch {
	case backup.Cutter == CutterNone && primary.Cutter != CutterNone:
		out = append(out, "cutter: the backup has no cutter (the primary cuts): tickets must be torn off by hand")
	case backup.Cutter == CutterPartialOnly && primary.Cutter == CutterFull:
		out = append(out, "cutter: the backup cuts only partially (the primary makes full cuts)")
	}
	if backup.Beep == BeepNone && primary.Beep != BeepNone {
		out = append(out, "buzzer: the backup has no buzzer (the primary has): beep lines are skipped")
	}
	if b, p := backup.Ack.Confirmation(), primary.Ack.Confirmation(); b < p {
		out = append(out, fmt.Sprintf("confirmation: the backup confirms jobs at best as %q (the primary: %q)", b, p))
	}
	if backup.Ack == AckNone && primary.Ack != AckNone {
		out = append(out, "status: the backup is one-way (the primary answers status queries): paper out or an open cover there goes unnoticed until tickets time out")
	}
	return out
}

// compareEncodings says which characters primary's encoding prints that
// backup's cannot (not even as a look-alike), or "" when there are none.
func compareEncodings(primary, backup Profile) string {
	if primary.Encoding == backup.Encoding {
		return ""
	}
	bc := newCodec(backup)
	if s, ok := doubleByte[primary.Encoding]; ok {
		// A double-byte repertoire is too large to list: try the common
		// characters its language needs and the others' sets may lack.
		var missing []string
		for _, r := range s.samples {
			if _, ok := bc.substitute(r); !ok && bc.encodeRune(r) == nil {
				missing = append(missing, string(r))
			}
		}
		if len(missing) == 0 {
			return ""
		}
		return fmt.Sprintf("encoding: the backup prints %s, which lacks %s characters of the primary's %s (%s): they would print as \"?\"",
			backup.Encoding, s.language, primary.Encoding, strings.Join(missing, " "))
	}
	cm := singleByte[primary.Encoding]
	if cm == nil {
		return ""
	}
	pc := newCodec(primary)
	var missing []rune
	for b := 0x80; b <= 0xFF; b++ {
		r := cm.DecodeByte(byte(b))
		if r == unicode.ReplacementChar || pc.encodeRune(r) == nil || cleanText(string(r)) != string(r) {
			continue // not a printable character of the primary
		}
		if bc.encodeRune(r) != nil {
			continue
		}
		if _, ok := bc.substitute(r); ok {
			continue
		}
		missing = append(missing, r)
	}
	if len(missing) == 0 {
		return ""
	}
	ex := missing[:min(len(missing), maxExamples)]
	more := ""
	if len(missing) > len(ex) {
		more = " …"
	}
	return fmt.Sprintf("encoding: the backup prints %s, which lacks %d characters of the primary's %s (%s%s): they would print as \"?\"",
		backup.Encoding, len(missing), primary.Encoding, strings.Join(strings.Split(string(ex), ""), " "), more)
}
