package agent

import (
	"printgate/drivers/escpos"
	"printgate/spool"
)

// render builds the job bytes for t as printed on lane l: the document
// rendered for l's profile, or the raw payload, with the banners the task's
// history calls for.
func render(t *spool.Task, l *lane) ([]byte, error) {
	opts := escpos.RenderOptions{PossibleDuplicate: t.PossibleDuplicate, Reprint: t.ReprintOf != ""}
	if t.Lane() != t.Printer {
		opts.FailoverFrom, opts.FailoverTo = t.Printer, t.Lane()
	}
	if len(t.Document) > 0 {
		doc, err := escpos.ParseDocument(t.Document)
		if err != nil {
			return nil, err
		}
		return escpos.Render(doc, l.pc.Profile, opts)
	}
	if !opts.PossibleDuplicate && !opts.Reprint && opts.FailoverFrom == "" {
		return t.Payload, nil
	}
	banner, err := escpos.RenderBanner(l.pc.Profile, opts)
	if err != nil {
		return nil, err
	}
	return append(banner, t.Payload...), nil
}
