package config

import (
	"fmt"
	"sort"
	"strings"

	suggestpkg "printgate/internal/suggest"
)

// Error is one problem found in a config file, placed where the person
// editing the file has to look.
type Error struct {
	// File is the config path as given to Load or Parse.
	File string
	// Line is the 1-based line of the offending key or table header.
	Line int
	// Msg is a plain sentence saying what is wrong and how to fix it.
	Msg string
}

// Error returns "file:line: msg", the form editors and terminals turn into
// a link to the line.
func (e Error) Error() string {
	if e.Line <= 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Errors is every problem of one config file, in line order. The
// agent refuses to start on any of them, and reports them all at once so
// that fixing a file takes one round, not one per mistake.
type Errors []Error

// Error lists the problems one per line.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes each problem to errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sortByLine orders problems as the file reads, keeping the order of
// problems on one line.
func (es Errors) sortByLine() {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
}

// suggest returns the candidate closest to s when it is close enough
// to be a likely typo ("bakup" for "backup"), else "".
func suggest(s string, candidates []string) string { return suggestpkg.Closest(s, candidates) }
