package logring

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// handler is the slog.Handler that stores records in a Ring. Attributes
// added with WithAttrs are rendered (and redacted) once, when added.
type handler struct {
	ring   *Ring
	level  slog.Leveler
	groups []string // open groups, outermost first
	pre    []byte   // rendered WithAttrs attributes, each " key=value"
}

var _ slog.Handler = (*handler)(nil)

// localOnlyKey marks a context whose records stay out of the ring.
type localOnlyKey struct{}

// LocalOnly returns ctx marked so that what is logged with it reaches the
// agent's console and log file but not the ring, so no log tail (the
// cloud's, the page's) carries it: for a line a person at the PC needs and
// nobody else may read, such as the first-run setup code.
func LocalOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, localOnlyKey{}, true)
}

// Handler returns a [slog.Handler] that stores every record at or above
// level in the ring, rendered as one text line after redaction (see
// [ReplaceAttr]). A nil level means [slog.LevelInfo]. It is meant to be one
// branch of the agent's fanout, and never blocks on a tail.
func (r *Ring) Handler(level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &handler{ring: r, level: level}
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	if ctx != nil && ctx.Value(localOnlyKey{}) != nil {
		return nil
	}
	line := h.render(rec)
	h.ring.add(rec.Level, line)
	return nil
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	h2.pre = append([]byte(nil), h.pre...)
	for _, a := range attrs {
		h2.pre = appendAttr(h2.pre, h.groups, a)
	}
	return &h2
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.groups = append(h.groups[:len(h.groups):len(h.groups)], name)
	return &h2
}

// render builds the record's line: time, level, msg, then the attributes.
func (h *handler) render(rec slog.Record) string {
	buf := make([]byte, 0, 128+len(h.pre))
	if !rec.Time.IsZero() {
		buf = append(buf, slog.TimeKey+"="...)
		buf = rec.Time.AppendFormat(buf, timeFormat)
		buf = append(buf, ' ')
	}
	buf = append(buf, slog.LevelKey+"="...)
	buf = append(buf, rec.Level.String()...)
	buf = appendAttr(buf, nil, slog.String(slog.MessageKey, rec.Message))
	buf = append(buf, h.pre...)
	rec.Attrs(func(a slog.Attr) bool {
		buf = appendAttr(buf, h.groups, a)
		return true
	})
	return string(buf)
}

// timeFormat is the console text handler's: RFC 3339 with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// appendAttr appends " key=value" for a (and each member of a group, keys
// joined with dots), after redaction, following slog's rules: values are
// resolved, empty attributes and empty groups are dropped, and a group with
// an empty key is inlined.
func appendAttr(buf []byte, groups []string, a slog.Attr) []byte {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return buf
	}
	if a.Value.Kind() == slog.KindGroup {
		members := a.Value.Group()
		if a.Key != "" {
			groups = append(groups[:len(groups):len(groups)], a.Key)
		}
		for _, m := range members {
			buf = appendAttr(buf, groups, m)
		}
		return buf
	}
	a = ReplaceAttr(groups, a)
	buf = append(buf, ' ')
	key := a.Key
	if len(groups) > 0 {
		key = strings.Join(groups, ".") + "." + key
	}
	buf = appendText(buf, key)
	buf = append(buf, '=')
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		return appendText(buf, v.String())
	case slog.KindTime:
		return v.Time().AppendFormat(buf, timeFormat)
	case slog.KindAny:
		return appendText(buf, anyText(v.Any()))
	default:
		return appendText(buf, v.String())
	}
}

// appendText appends s, quoted as Go does when it is empty or holds a space,
// '=', '"' or anything unprintable, so one record is always one line.
func appendText(buf []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(buf, s)
	}
	return append(buf, s...)
}

func needsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for _, c := range s {
		if c == '=' || c == '"' || c == utf8.RuneError || unicode.IsSpace(c) || !unicode.IsPrint(c) {
			return true
		}
	}
	return false
}

// truncate cuts line to at most max bytes, on a character boundary, marking
// the cut.
func truncate(line string, max int) string {
	if len(line) <= max {
		return line
	}
	const mark = "…[truncated]"
	cut := max - len(mark)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + mark
}

// notice renders a line the tail itself adds (a drop count, the end of the
// tail); it is sent to one follower and never stored.
func notice(now time.Time, level slog.Level, msg string) string {
	h := handler{}
	return h.render(slog.NewRecord(now, level, msg, 0))
}
