package web

import (
	"time"

	"printgate/spool"
)

// dupMatch is the earlier raw job a raw task's POSSIBLE DUPLICATE mark
// comes from, as the task page explains it.
type dupMatch struct {
	TaskNo  string
	Earlier string // how much earlier it was taken, such as "3s"
}

// rawDupOf finds the earlier job a raw task marked POSSIBLE DUPLICATE
// matched: the raw port marks a job whose bytes are those of a job it took
// within raw_duplicate_window, and the spool keeps every task's SHA-256, so
// the match is the latest earlier raw task of the same printer with the
// same sum. nil for any other task, and for a mark with another cause (an
// outcome the agent could not learn).
func (p *Page) rawDupOf(t *spool.Task) *dupMatch {
	if !t.PossibleDuplicate || t.Origin != spool.OriginRaw || t.SHA256 == "" {
		return nil
	}
	pg, err := p.b.Tasks(spool.ListOptions{Printer: t.Printer, Desc: true, After: t.Seq, Limit: 64})
	if err != nil {
		return nil
	}
	for _, e := range pg.Tasks {
		if e.Origin == spool.OriginRaw && e.SHA256 == t.SHA256 && !e.AcceptedAt.After(t.AcceptedAt) {
			return &dupMatch{TaskNo: e.TaskNo, Earlier: t.AcceptedAt.Sub(e.AcceptedAt).Round(time.Second).String()}
		}
	}
	return nil
}
