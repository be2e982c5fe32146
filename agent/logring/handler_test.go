package logring

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"testing/slogtest"
	"time"
)

// TestHandlerSlogtest ensures the handler follows every slog.Handler rule
// the standard library checks: WithAttrs, WithGroup (nested, and dropped
// when empty), inlined groups, zero times, LogValuer resolution.
func TestHandlerSlogtest(t *testing.T) {
	var r *Ring
	slogtest.Run(t, func(*testing.T) slog.Handler {
		r = New(Options{})
		return r.Handler(slog.LevelDebug)
	}, func(t *testing.T) map[string]any {
		lines := r.Lines()
		if len(lines) != 1 {
			t.Fatalf("ring holds %d lines, want 1: %q", len(lines), lines)
		}
		return parseLine(t, lines[0])
	})
}

// parseLine reads a "key=value key.sub=value" line back into nested maps.
func parseLine(t *testing.T, line string) map[string]any {
	t.Helper()
	m := map[string]any{}
	for s := line; s != ""; {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			t.Fatalf("no '=' in %q (line %q)", s, line)
		}
		key := s[:eq]
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, `"`) {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				t.Fatalf("bad quoting in %q: %v", line, err)
			}
			val, _ = strconv.Unquote(q)
			s = s[len(q):]
		} else {
			sp := strings.IndexByte(s, ' ')
			if sp < 0 {
				sp = len(s)
			}
			val, s = s[:sp], s[sp:]
		}
		s = strings.TrimPrefix(s, " ")
		parts := strings.Split(key, ".")
		cur := m
		for _, p := range parts[:len(parts)-1] {
			sub, ok := cur[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				cur[p] = sub
			}
			cur = sub
		}
		cur[parts[len(parts)-1]] = val
	}
	return m
}

// TestHandlerLine ensures the exact line: time, level, msg, WithAttrs
// attributes under the groups open when they were added, then the record's,
// quoted only where needed and always on one line.
func TestHandlerLine(t *testing.T) {
	r := New(Options{})
	h := r.Handler(nil).WithAttrs([]slog.Attr{slog.Int("a", 1)}).WithGroup("g").
		WithAttrs([]slog.Attr{slog.String("b", "two words")}).WithGroup("h")
	at := time.Date(2026, 5, 1, 10, 0, 0, 123e6, time.UTC)
	rec := slog.NewRecord(at, slog.LevelWarn, "paper out\nagain", 0)
	rec.AddAttrs(slog.Duration("c", 1500*time.Millisecond), slog.String("d", ""))
	if err := h.Handle(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	want := `time=2026-05-01T10:00:00.123Z level=WARN msg="paper out\nagain" a=1 g.b="two words" g.h.c=1.5s g.h.d=""`
	if got := r.Lines(); len(got) != 1 || got[0] != want {
		t.Fatalf("lines = %q\nwant [%q]", got, want)
	}
}

// TestHandlerLocalOnly ensures a record logged with a LocalOnly context is
// not stored (no log tail carries it) while the other handlers of the
// agent's fanout still get it, and other records are stored as usual.
func TestHandlerLocalOnly(t *testing.T) {
	r := New(Options{})
	log := slog.New(r.Handler(nil))
	log.InfoContext(LocalOnly(context.Background()), "first-run setup code: 1234-5678")
	log.Info("kept")
	if got := r.Lines(); len(got) != 1 || !strings.Contains(got[0], "msg=kept") {
		t.Fatalf("lines = %q, want only the kept line", got)
	}
}

// TestHandlerLevel ensures records below the handler's level are neither
// enabled nor stored, and that the level is read on every record.
func TestHandlerLevel(t *testing.T) {
	r := New(Options{})
	var lv slog.LevelVar
	lv.Set(slog.LevelWarn)
	log := slog.New(r.Handler(&lv))
	log.Info("quiet")
	log.Warn("loud")
	lv.Set(slog.LevelDebug)
	log.Debug("now heard")
	got := r.Lines()
	if len(got) != 2 || !strings.Contains(got[0], "msg=loud") || !strings.Contains(got[1], `msg="now heard"`) {
		t.Fatalf("lines = %q, want loud then now heard", got)
	}
}
