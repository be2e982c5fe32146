package agent

import (
	"fmt"
	"html/template"

	"printgate/agent/api"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// Preview stays in the core: it draws with the running lane's profile and
// through the lane's own banner and raw-job framing (renderOptions, rawJob),
// so the page shows what the paper gets.

// Preview draws t as it looks on paper on the printer it prints on.
func (a *Agent) Preview(t *spool.Task) (template.HTML, error) {
	// The running lanes, not the start-up config: a reload may have
	// changed the printer's profile.
	l := a.lane(t.Lane())
	if l == nil {
		if l = a.lane(t.Printer); l == nil {
			return "", fmt.Errorf("preview %s: %w: %q is no longer configured", t.TaskNo, api.ErrUnknownPrinter, t.Lane())
		}
	}
	return previewHTML(t, l.pc.Profile)
}

// previewHTML draws t for a printer of profile p with the banners its
// printer path prints: a document through the same layout as Render, a raw
// payload (after the banner bytes the lane puts before it) through the
// stream decoder the emulator uses, so the page shows what the paper gets.
func previewHTML(t *spool.Task, p escpos.Profile) (template.HTML, error) {
	opts := renderOptions(t)
	if len(t.Document) > 0 {
		doc, err := escpos.ParseDocument(t.Document)
		if err != nil {
			return "", fmt.Errorf("preview %s: %w", t.TaskNo, err)
		}
		out, err := escpos.PreviewHTML(doc, p, opts)
		if err != nil {
			return "", fmt.Errorf("preview %s: %w", t.TaskNo, err)
		}
		return out, nil
	}
	if len(t.Payload) == 0 {
		return template.HTML(`<p class="paper-missing">The ticket's content is no longer kept.</p>`), nil
	}
	stream, err := rawJob(t.Payload, p, opts)
	if err != nil {
		return "", fmt.Errorf("preview %s: %w", t.TaskNo, err)
	}
	caption := fmt.Sprintf(`<p class="paper-caption">raw ESC/POS payload, %d bytes</p>`, len(t.Payload))
	return template.HTML(caption) + escpos.PreviewStreamHTML(stream, p.DecodeOptions()), nil
}
