package config

import (
	"fmt"
	"sort"
	"strings"
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
func suggest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		limit := 2
		if len(c) <= 4 {
			limit = 1
		}
		if d <= limit && (best == "" || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance with adjacent swaps counted
// as one edit, since swapped letters are the commonest typo.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
