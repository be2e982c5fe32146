package config

import (
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Secret holds a credential such as the intake API token. Every way of
// printing or encoding it yields "[redacted]", so a Config can be logged,
// dumped with %+v or served as JSON without leaking the token; Reveal is the
// one deliberate way to get the value.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret itself, for comparing a presented token.
func (s Secret) Reveal() string { return string(s) }

// String hides the secret from %v and %s.
func (s Secret) String() string { return redacted }

// GoString hides the secret from %#v.
func (s Secret) GoString() string { return redacted }

// Format hides the secret from every other verb (%q, %x, %d, ...), which
// would otherwise print the underlying string.
func (s Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalText hides the secret from encoding/json, TOML and other encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue hides the secret from log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// durationDays matches a leading whole number of days: "7d", "1d12h".
var durationDays = regexp.MustCompile(`^([+-]?[0-9]+)d(.*)$`)

// parseDuration accepts Go durations ("90s", "1m30s") and, because
// retention is naturally said in days, a leading "Nd" ("7d", "1d12h").
func parseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not a duration: write it like \"90s\", \"1m30s\", \"15m\" or \"7d\"", s)
	t := strings.TrimSpace(s)
	if m := durationDays.FindStringSubmatch(t); m != nil {
		days, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || days > math.MaxInt64/int64(24*time.Hour) || days < math.MinInt64/int64(24*time.Hour) {
			return 0, bad
		}
		d := time.Duration(days) * 24 * time.Hour
		if m[2] == "" {
			return d, nil
		}
		rest, err := time.ParseDuration(m[2])
		if err != nil || strings.HasPrefix(m[2], "-") || strings.HasPrefix(m[2], "+") {
			return 0, bad
		}
		if days < 0 {
			rest = -rest
		}
		if (rest > 0 && d > math.MaxInt64-rest) || (rest < 0 && d < math.MinInt64-rest) {
			return 0, bad
		}
		return d + rest, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, bad
	}
	return d, nil
}

// formatDuration prints a duration the way the config spells it, so
// messages quote what the user would write.
func formatDuration(d time.Duration) string {
	day := 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

var sizeRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$`)

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseSize reads a byte size such as "512MiB", "1GiB" or "500MB"
// (KiB/MiB/GiB are powers of 1024, KB/MB/GB powers of 1000).
func parseSize(s string) (int64, error) {
	bad := fmt.Errorf("%q is not a size: write it like \"512MiB\" or \"1GiB\", or as a number of bytes", s)
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, bad
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, bad
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n*unit >= math.MaxInt64 {
		return 0, bad
	}
	return int64(n * unit), nil
}

// typeName says what kind of TOML value v is, in words for people who
// do not know TOML's type names.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "text"
	case int64:
		return "a whole number"
	case float64:
		return "a decimal number"
	case bool:
		return "true/false"
	case map[string]any:
		return "a table"
	case []map[string]any, []any:
		return "a list"
	default:
		return "a date or time"
	}
}

// table reads one TOML table, reporting every wrong type and, in
// finish, every key nobody asked for.
type table struct {
	p     *parser
	path  string // lineIndex path of the table, "" at the top level
	label string // how messages name the table, "" at the top level
	m     map[string]any
	asked []string
}

// where names a key in messages: "timeout in [defaults]".
func (t *table) where(key string) string {
	if t.label == "" {
		return key
	}
	return key + " in " + t.label
}

// line is the line of key, or of the table when the key is not written
// (or not found).
func (t *table) line(key string) int {
	return t.p.lines.find(joinKey(t.path, key))
}

// errf reports a problem with key, at key's line.
func (t *table) errf(key, format string, args ...any) {
	t.p.add(t.line(key), t.where(key)+": "+fmt.Sprintf(format, args...))
}

// get returns the raw value of key and notes that key is known.
func (t *table) get(key string) (any, bool) {
	if !slices.Contains(t.asked, key) {
		t.asked = append(t.asked, key)
	}
	v, ok := t.m[key]
	return v, ok
}

func (t *table) wrongType(key, want string, v any) {
	t.errf(key, "must be %s, not %s", want, typeName(v))
}

// str returns a text value; ok is false when key is absent or wrong.
func (t *table) str(key string) (string, bool) {
	v, ok := t.get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		t.wrongType(key, "text in quotes", v)
	}
	return s, ok
}

// int returns a whole-number value.
func (t *table) int(key string) (int, bool) {
	v, ok := t.get(key)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	if !ok {
		t.wrongType(key, "a whole number (no quotes)", v)
		return 0, false
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		t.errf(key, "%d is far too large", n)
		return 0, false
	}
	return int(n), true
}

// float returns a number; whole numbers are fine ("retry_factor = 2").
func (t *table) float(key string) (float64, bool) {
	v, ok := t.get(key)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			t.errf(key, "must be an ordinary number, not %v", n)
			return 0, false
		}
		return n, true
	case int64:
		return float64(n), true
	}
	t.wrongType(key, "a number (no quotes)", v)
	return 0, false
}

// duration returns a duration written as text ("90s", "7d").
func (t *table) duration(key string) (time.Duration, bool) {
	v, ok := t.get(key)
	if !ok {
		return 0, false
	}
	s, ok := v.(string)
	if !ok {
		t.wrongType(key, `a duration in quotes such as "90s"`, v)
		return 0, false
	}
	d, err := parseDuration(s)
	if err != nil {
		t.errf(key, "%v", err)
		return 0, false
	}
	return d, true
}

// positive reads an optional duration into *dst, keeping *dst when key is
// absent, and requires it to be longer than zero.
func (t *table) positive(key string, dst *time.Duration) {
	d, ok := t.duration(key)
	if !ok {
		return
	}
	if d <= 0 {
		t.errf(key, "%s must be longer than zero", formatDuration(d))
		return
	}
	*dst = d
}

// table returns the sub-table key, or nil when it is absent or not a table.
func (t *table) table(key, label string) *table {
	v, ok := t.get(key)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.wrongType(key, "a table (["+key+"] followed by its keys)", v)
		return nil
	}
	return &table{p: t.p, path: joinKey(t.path, key), label: label, m: m}
}

// finish reports the keys of the table that no reader asked for: a typo in
// a key name would otherwise silently leave a setting at its default.
func (t *table) finish() {
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		if !slices.Contains(t.asked, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		msg := fmt.Sprintf("unknown key %q", k)
		if t.label != "" {
			msg += " in " + t.label
		}
		switch s := suggest(k, t.asked); {
		case s != "":
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		case t.label != "" && slices.Contains(topKeys, k):
			msg += fmt.Sprintf("; %s belongs at the top of the file, before the first [table] header", k)
		}
		t.p.add(t.line(k), msg)
	}
}

// intAtLeast stores the integer under key in dst when it is at least min,
// else reports it with why, the plain reason the key exists.
func (t *table) intAtLeast(key string, min int, why string, dst *int) {
	n, ok := t.int(key)
	if !ok {
		return
	}
	switch {
	case n >= min:
		*dst = n
	case min == 0:
		t.errf(key, "%d must not be negative (%s)", n, why)
	default:
		t.errf(key, "%d must be at least %d (%s)", n, min, why)
	}
}
