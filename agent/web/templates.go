package web

import (
	"html/template"
	"io/fs"
	"path"
	"strings"
	"time"
)

// templateFuncs are the helpers templates use besides the view's methods.
var templateFuncs = template.FuncMap{
	// when formats a time for a person on the store PC (its local zone),
	// "" for the zero time.
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		// A no-break space: the date and its time stay on one line (a
		// narrow column wrapped them at 1280 px).
		return t.Local().Format("2006-01-02\u00a015:04:05")
	},
	// tone is the CSS class of a printer, task, link or health state.
	"tone": tone,
	"join": strings.Join,
	// tries counts a task's sends, as its page does.
	"tries": tries,
	// pct is done/total as a whole percentage.
	"pct": func(done, total int) int {
		if total <= 0 {
			return 0
		}
		return done * 100 / total
	},
}

// tone maps a state code to the badge colour class.
func tone(state string) string {
	switch state {
	case "READY", "PRINTED", "online", "ok":
		return "good"
	case "BUSY", "ACCEPTED", "QUEUED", "SENDING", "RETRY_WAIT", "UNKNOWN", "PARKED", "offline", "unpaired", "degraded":
		return "warn"
	case "PAPER_OUT", "COVER_OPEN", "OFFLINE", "ERROR", "HELD", "TIMED_OUT", "FAILED", "failed":
		return "bad"
	}
	return "muted"
}

// mustTemplates parses every page with the layout. The templates are
// embedded, so a parse error is a build defect: tests catch it.
func mustTemplates() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := make(map[string]*template.Template)
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" {
			continue
		}
		t := template.Must(template.New(base).Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", n))
		out[base] = t
	}
	return out
}
