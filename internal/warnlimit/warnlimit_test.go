package warnlimit

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLimiterSummarises ensures a window logs PerMinute lines of a message,
// says the rest as one count once the window is over, logs again in the
// next, and counts each message apart.
func TestLimiterSummarises(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	w := Limiter{Now: func() time.Time { return now }}
	for i := 0; i < 40; i++ {
		w.Warn(log, "cloud frame refused", "i", i)
	}
	w.Warn(log, "another message")
	if n := strings.Count(buf.String(), "msg=\"cloud frame refused\""); n != PerMinute {
		t.Fatalf("40 lines in a minute logged %d, want %d:\n%s", n, PerMinute, buf.String())
	}
	if !strings.Contains(buf.String(), "another message") {
		t.Fatalf("a second message was held back by the first one's count:\n%s", buf.String())
	}
	now = now.Add(Window)
	w.Warn(log, "cloud frame refused", "i", 40)
	if !strings.Contains(buf.String(), "cloud frame refused (repeated; suppressed in the last minute)\" suppressed=35") {
		t.Errorf("no summary of the 35 held back once the minute was over:\n%s", buf.String())
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != PerMinute+1+1+1 {
		t.Errorf("%d lines, want %d, the other message, one summary and the new line", n, PerMinute)
	}
}

// TestLimiterLogKeepsLevel ensures Log limits a line at any level the way
// Warn does, and says its count at that level.
func TestLimiterLogKeepsLevel(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	w := Limiter{Now: func() time.Time { return now }}
	for i := 0; i < 12; i++ {
		w.Log(log, slog.LevelInfo, "raw job accepted", "i", i)
	}
	now = now.Add(Window)
	w.Log(log, slog.LevelInfo, "raw job accepted", "i", 12)
	if n := strings.Count(buf.String(), "level=INFO msg=\"raw job accepted\""); n != PerMinute+1 {
		t.Errorf("%d INFO lines for 13 in two windows, want %d:\n%s", n, PerMinute+1, buf.String())
	}
	if !strings.Contains(buf.String(), "level=INFO msg=\"raw job accepted (repeated; suppressed in the last minute)\" suppressed=7") {
		t.Errorf("no INFO summary of the 7 held back:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "level=WARN") {
		t.Errorf("an INFO message was logged at WARN:\n%s", buf.String())
	}
}
