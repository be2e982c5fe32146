package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"printgate/drivers/printertest"
)

// ticketBytes is the ESC/POS job both systems get for tag: the same bytes
// through lp and as printgate's base64 payload, so the two paths differ only
// in how they deliver them. Every line carries the tag, so a ticket cut off
// by a dropped connection can be told from a whole one on paper, even when
// the emulator glues its remains to the next job's first line.
func ticketBytes(tag string, items int) []byte {
	b := []byte{0x1b, '@'}
	b = fmt.Appendf(b, "TICKET %s\n", tag)
	for j := 1; j <= items; j++ {
		b = fmt.Appendf(b, "ITEM %s %03d burger fries cola x1\n", tag, j)
	}
	b = fmt.Appendf(b, "END %s\n", tag)
	return append(b, 0x1d, 'V', 'B', 0) // feed and partial cut
}

// The patterns look anywhere in a line, not at its start: a job cut short
// leaves its last line open, and the next job's first line lands after it.
var (
	headerRE = regexp.MustCompile(`TICKET (\S+)`)
	itemRE   = regexp.MustCompile(`ITEM (\S+) (\d{3})`)
	endRE    = regexp.MustCompile(`END (\S+)`)
)

// bannerText is what printgate prints above a copy that may be a repeat.
const bannerText = "POSSIBLE DUPLICATE"

// paperCopy is what the paper shows of one tag.
type paperCopy struct {
	Plain  int // headers with no POSSIBLE DUPLICATE banner above them
	Marked int // headers under the banner
	Ends   int // END lines: copies that reached their last line
	items  map[int]bool
	// EndAt is when the first ticket holding the END line was cut (zero if
	// that ticket was never cut).
	EndAt time.Time
}

// Complete reports whether a whole copy of a ticket with items lines is on
// paper: its header, every item and its last line.
func (c *paperCopy) Complete(items int) bool {
	return c != nil && c.Plain+c.Marked > 0 && c.Ends > 0 && len(c.items) == items
}

// Seen reports whether any line of the tag is on paper.
func (c *paperCopy) Seen() bool {
	return c != nil && (c.Plain+c.Marked > 0 || c.Ends > 0 || len(c.items) > 0)
}

// readPaper scans what a printer put on paper, in order: its cut tickets,
// then the text printed but not cut yet.
func readPaper(p *printertest.Printer) map[string]*paperCopy {
	tickets := p.Tickets()
	if pend := p.Pending(); len(pend.Lines) > 0 {
		tickets = append(tickets, pend)
	}
	return scanTickets(tickets)
}

// scanTickets counts every tag's lines. A banner marks the next header
// after it, as printertest.Copies does.
func scanTickets(tickets []printertest.Ticket) map[string]*paperCopy {
	out := map[string]*paperCopy{}
	get := func(tag string) *paperCopy {
		c := out[tag]
		if c == nil {
			c = &paperCopy{items: map[int]bool{}}
			out[tag] = c
		}
		return c
	}
	for _, tk := range tickets {
		banner := false
		for _, line := range tk.Lines {
			for _, m := range itemRE.FindAllStringSubmatch(line, -1) {
				n, _ := strconv.Atoi(m[2])
				get(m[1]).items[n] = true
			}
			if strings.Contains(line, bannerText) {
				banner = true
			}
			for _, m := range headerRE.FindAllStringSubmatch(line, -1) {
				c := get(m[1])
				if banner {
					c.Marked++
				} else {
					c.Plain++
				}
				banner = false
			}
			for _, m := range endRE.FindAllStringSubmatch(line, -1) {
				c := get(m[1])
				c.Ends++
				if c.EndAt.IsZero() && tk.Cut != "" {
					c.EndAt = tk.At
				}
			}
		}
	}
	return out
}

// percentile returns the q-quantile (0..1) of ds by nearest rank; zero for
// none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
