// Package tomlq writes a string as a TOML basic string. It is the one
// escaper for every config line printgate writes or shows (the installer's
// config file, the lines the manager page offers and appends), kept in a
// leaf of its own so that the installer need not import the agent's config
// package to quote a value.
package tomlq

import (
	"fmt"
	"strings"
)

// Quote writes s as a TOML basic string, escaping quotes, backslashes and
// control characters, for the config lines printgate writes or shows.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
