package web

import (
	"log/slog"
	"net/http"

	"printgate/agent/logring"
)

// logLines is how many recent lines the live tail starts with.
const logLines = 200

// logsData is the logs page.
type logsData struct {
	Level string
	Q     string
}

// logsPage serves GET /logs; the lines come from /logs/stream.
func (p *Page) logsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	v := p.newView(r, sess, "logs")
	v.Title = v.L.T("logs.title")
	lv := r.URL.Query().Get("level")
	if lv == "" {
		lv = "INFO"
	}
	v.Data = logsData{Level: lv, Q: r.URL.Query().Get("q")}
	p.render(w, r, http.StatusOK, "logs.html", v)
}

// logStream serves GET /logs/stream?level=&q=: the recent matching lines,
// then new ones, one "line" event each (the script shows them as text,
// never as markup), and an "end" event when the tail ends.
func (p *Page) logStream(w http.ResponseWriter, r *http.Request, _ *session) {
	var level slog.Level
	if lv := r.URL.Query().Get("level"); lv != "" {
		if err := level.UnmarshalText([]byte(lv)); err != nil {
			http.Error(w, "level must be DEBUG, INFO, WARN or ERROR", http.StatusBadRequest)
			return
		}
	}
	s, done := p.startSSE(w, r)
	if s == nil {
		return
	}
	defer done()
	ctx, cancel := mergeDone(r.Context(), p.ctx)
	defer cancel()
	err := p.b.Tail(ctx, logring.TailOptions{
		Level: level, Contains: r.URL.Query().Get("q"), Lines: logLines, Follow: true,
	}, func(lines []string) error {
		for _, ln := range lines {
			if err := s.send("line", ln); err != nil {
				return err
			}
		}
		return nil
	})
	if ctx.Err() == nil {
		if err != nil {
			p.log.Debug("manager page: log tail ended", "err", err)
		}
		_ = s.send("end", "")
	}
}
