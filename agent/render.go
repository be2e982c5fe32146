package agent

import (
	"slices"

	"printgate/drivers/escpos"
	"printgate/spool"
)

// render builds the job bytes for t as printed on lane l: the document
// rendered for l's profile, or the raw payload, with the banners the task's
// history calls for; a raw payload ends with enablePrinter.
func render(t *spool.Task, l *lane) ([]byte, error) {
	opts := renderOptions(t)
	if len(t.Document) > 0 {
		doc, err := escpos.ParseDocument(t.Document)
		if err != nil {
			return nil, err
		}
		return escpos.Render(doc, l.pc.Profile, opts)
	}
	job, err := rawJob(t.Payload, l.pc.Profile, opts)
	if err != nil {
		return nil, err
	}
	return slices.Concat(job, enablePrinter), nil
}

// enablePrinter is ESC = 1 (select peripheral device: the printer). It
// ends every raw payload the agent prints, after its banners: a payload
// that disabled the printer (ESC = 0, which the raw port strips but a
// payload through the API may carry) would leave it ignoring everything
// after, ESC @ and the agent's next tickets included, while it still
// answers DLE EOT as if healthy. It is a whole command, so the job still
// ends on a command boundary (docs/DESIGN.md, invariant 9). The page's preview
// leaves it out: it prints nothing.
var enablePrinter = []byte{0x1B, '=', 0x01}

// rawJob is a raw payload as the lane sends it to a printer of profile p:
// the banners opts call for before it, and after an incomplete one the
// line and cut that end it. The page's preview draws the same bytes.
func rawJob(payload []byte, p escpos.Profile, opts escpos.RenderOptions) ([]byte, error) {
	if !opts.PossibleDuplicate && !opts.Reprint && opts.FailoverFrom == "" && !opts.Incomplete {
		return payload, nil
	}
	banner, err := escpos.RenderBanner(p, opts)
	if err != nil {
		return nil, err
	}
	job := append(banner, payload...)
	if opts.Incomplete {
		end, err := escpos.RenderIncompleteEnd(p)
		if err != nil {
			return nil, err
		}
		job = append(job, end...)
	}
	return job, nil
}

// renderOptions are the banners t's history calls for: POSSIBLE DUPLICATE,
// REPRINT, FAILOVER, INCOMPLETE JOB. The printer path and the page's preview both use it,
// so the preview shows the banners the paper gets.
func renderOptions(t *spool.Task) escpos.RenderOptions {
	opts := escpos.RenderOptions{PossibleDuplicate: t.PossibleDuplicate, Reprint: t.ReprintOf != "", Incomplete: t.Truncated}
	if t.Lane() != t.Printer {
		opts.FailoverFrom, opts.FailoverTo = t.Printer, t.Lane()
	}
	return opts
}
