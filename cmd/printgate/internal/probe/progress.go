package probe

import (
	"fmt"
	"io"
)

// Progress prints "scanned N/M hosts" on one terminal line, only when the
// percentage moves, so a /22 does not produce a thousand writes.
type Progress struct {
	W       io.Writer // the terminal, stderr
	CIDR    string    // what is scanned, as the line names it
	lastPct int
	printed bool
}

// Report is the scan's ScanOptions.Progress.
func (p *Progress) Report(done, total int) {
	pct := done * 100 / total
	if p.printed && pct == p.lastPct && done != total {
		return
	}
	p.lastPct, p.printed = pct, true
	fmt.Fprintf(p.W, "\rscanning %s: %d/%d hosts", p.CIDR, done, total)
}

// Finish ends the line once the scan is over.
func (p *Progress) Finish() {
	if p.printed {
		fmt.Fprintln(p.W)
	}
}
