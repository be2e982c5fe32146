package config

import (
	"strconv"
	"strings"
)

// lineIndex maps where things are written in a config file to their line
// numbers. BurntSushi/toml keeps key positions private, yet a restaurant's IT
// person needs "line 14" to find a typo, so the source is scanned once more.
//
// Paths are dotted key paths in which every array-of-tables entry gets its
// 0-based index: "listen", "cloud" (the header), "cloud.url", "printers.1"
// (the second [[printers]] header), "printers.1.backup". The scanner is not
// a TOML parser: it runs only on files the real parser accepted, and it needs
// to get lines right for the ordinary layout (one key per line, comments,
// multi-line strings and arrays); anything it cannot place falls back to an
// enclosing table's line.
type lineIndex map[string]int

// scanLines indexes src. It never fails: a line it does not
// understand is skipped.
func scanLines(src string) lineIndex {
	lines := lineIndex{}
	arrays := map[string]int{} // resolved array-of-tables path -> entries seen
	table := ""                // resolved path of the current table
	var st scanState
	for i, ln := range strings.Split(strings.TrimPrefix(src, "\ufeff"), "\n") {
		lineNo := i + 1
		ln = strings.TrimSuffix(ln, "\r")
		if st.multi != "" || st.depth > 0 {
			st.scan(ln)
			continue
		}
		s := strings.TrimSpace(ln)
		switch {
		case s == "" || s[0] == '#':
		case strings.HasPrefix(s, "[["):
			segs, _, ok := splitKey(s[2:], ']')
			if !ok {
				continue
			}
			parent := resolveKey(arrays, segs[:len(segs)-1])
			name := joinKey(parent, segs[len(segs)-1])
			idx := arrays[name]
			arrays[name] = idx + 1
			table = name + "." + strconv.Itoa(idx)
			lines.setPath(table, lineNo)
		case s[0] == '[':
			segs, _, ok := splitKey(s[1:], ']')
			if !ok {
				continue
			}
			table = resolveKey(arrays, segs)
			lines.setPath(table, lineNo)
		default:
			segs, rest, ok := splitKey(s, '=')
			if !ok {
				continue
			}
			p := table
			for _, seg := range segs {
				p = joinKey(p, seg)
				lines.set(p, lineNo)
			}
			st.scan(rest)
		}
	}
	return lines
}

// set records the first line a path appears on: a later mention (a dotted
// key reopening a table) is not where the reader should look.
func (l lineIndex) set(path string, line int) {
	if _, ok := l[path]; !ok {
		l[path] = line
	}
}

// setPath records line for path and for every table it implies: [a.b]
// defines a, and a problem reported about a (an unknown key, "write
// [[printers]]" for [printers.kitchen]) must point somewhere.
func (l lineIndex) setPath(path string, line int) {
	for i := range len(path) {
		if path[i] == '.' {
			l.set(path[:i], line)
		}
	}
	l.set(path, line)
}

// find returns the line of path, or of its nearest enclosing path that has
// one, or 0.
func (l lineIndex) find(path string) int {
	for {
		if n, ok := l[path]; ok {
			return n
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
}

func joinKey(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// resolveKey turns the segments of a table header into a path, inserting
// the current index after every array-of-tables segment so that [a.b] after
// [[a]] lands under the last a entry, as TOML defines.
func resolveKey(arrays map[string]int, segs []string) string {
	p := ""
	for _, seg := range segs {
		p = joinKey(p, seg)
		if n, ok := arrays[p]; ok {
			p += "." + strconv.Itoa(n-1)
		}
	}
	return p
}

// splitKey parses a (possibly dotted, possibly quoted) key from the
// start of s up to the terminator byte and returns its segments and the text
// after the terminator.
func splitKey(s string, term byte) (segs []string, rest string, ok bool) {
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return nil, "", false
		}
		var seg string
		switch s[i] {
		case '"':
			j := i + 1
			var b strings.Builder
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				b.WriteByte(s[j])
				j++
			}
			if j >= len(s) {
				return nil, "", false
			}
			seg, i = b.String(), j+1
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "", false
			}
			seg, i = s[i+1:i+1+j], i+j+2
		default:
			j := i
			for j < len(s) && bareKeyByte(s[j]) {
				j++
			}
			if j == i {
				return nil, "", false
			}
			seg, i = s[i:j], j
		}
		segs = append(segs, seg)
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return nil, "", false
		}
		switch s[i] {
		case '.':
			i++
		case term:
			return segs, s[i+1:], true
		default:
			return nil, "", false
		}
	}
}

func bareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// scanState follows a value across lines: an open multi-line string
// or an unclosed array or inline table means the next lines hold no keys or
// headers of their own.
type scanState struct {
	multi string // `"""` or `'''` while inside a multi-line string
	depth int    // open [ and { of the current value
}

// scan consumes one line (or the rest of one) of value text.
func (st *scanState) scan(s string) {
	i := 0
	for i < len(s) {
		if st.multi != "" {
			j := findClose(s[i:], st.multi)
			if j < 0 {
				return
			}
			i += j + len(st.multi)
			// A closing delimiter may carry up to two more quotes that
			// belong to the string ("""a""""").
			for k := 0; k < 2 && i < len(s) && s[i] == st.multi[0]; k++ {
				i++
			}
			st.multi = ""
			continue
		}
		switch c := s[i]; {
		case c == '#':
			return
		case strings.HasPrefix(s[i:], `"""`), strings.HasPrefix(s[i:], `'''`):
			st.multi = s[i : i+3]
			i += 3
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return
			}
			i += j + 2
		case c == '[' || c == '{':
			st.depth++
			i++
		case c == ']' || c == '}':
			if st.depth > 0 {
				st.depth--
			}
			i++
		default:
			i++
		}
	}
}

// findClose finds the closing delimiter of a multi-line string in s;
// in basic strings ("""), a backslash escapes the next byte.
func findClose(s, delim string) int {
	for i := 0; i+len(delim) <= len(s); i++ {
		if delim[0] == '"' && s[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(s[i:], delim) {
			return i
		}
	}
	return -1
}
