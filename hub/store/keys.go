package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxIDLen is the longest tenant or store id.
const MaxIDLen = 64

// IDChars describes the alphabet of tenant and store ids, for messages.
const IDChars = "a-z 0-9 _ -, starting with a letter or digit"

// ValidID reports whether s can be a tenant or store id: 1-64 characters
// of [a-z0-9_-], the first a letter or digit. Ids are key tokens of the
// engine and path segments of the API, so their alphabet is narrow.
func ValidID(s string) error {
	if len(s) == 0 || len(s) > MaxIDLen {
		return fmt.Errorf("must be 1-%d characters, got %d", MaxIDLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return fmt.Errorf("%q has character %q at position %d; allowed are %s", s, c, i+1, IDChars)
		}
	}
	return nil
}

// MaxTaskNoLen is the longest task_no, the agent's (PROTOCOL.md §3).
const MaxTaskNoLen = 128

// ValidTaskNo reports why s cannot be a task_no: 1-128 characters of
// [A-Za-z0-9._:-], the agent's alphabet. A task_no or command id an agent
// sends is checked with it before it names a key: taskKey's escape is
// unambiguous only within that alphabet, and a key the engine refuses
// would fail the frame's write every time the agent resends it.
func ValidTaskNo(s string) error {
	if len(s) == 0 || len(s) > MaxTaskNoLen {
		return fmt.Errorf("must be 1-%d characters, got %d", MaxTaskNoLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == ':' || c == '-':
		default:
			return fmt.Errorf("has character %q at position %d; allowed are A-Z a-z 0-9 . _ : -", c, i+1)
		}
	}
	return nil
}

// taskKey is the key of a store's task in hub_jobs, hub_tasks and
// hub_pending: "<store>.<task_no>", with the two characters of the
// task_no alphabet a key may not hold as such escaped ('.' separates key
// tokens, ':' is not a key character): "=2E" and "=3A". '=' is not in the
// task_no alphabet, so the escape is unambiguous.
func taskKey(store, taskNo string) string {
	var b strings.Builder
	b.Grow(len(store) + 1 + len(taskNo) + 8)
	b.WriteString(store)
	b.WriteByte('.')
	for i := 0; i < len(taskNo); i++ {
		switch c := taskNo[i]; c {
		case '.':
			b.WriteString("=2E")
		case ':':
			b.WriteString("=3A")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// taskNoOfKey undoes taskKey's escape on the part after the store.
func taskNoOfKey(key string) string {
	_, esc, _ := strings.Cut(key, ".")
	return strings.NewReplacer("=2E", ".", "=3A", ":").Replace(esc)
}

// hashSecret is how a device token or API key is stored: the hex SHA-256
// of the secret. The secrets are 32 random bytes, so a fast hash is
// enough: nothing is left to guess by brute force.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// newSecret makes a random secret with a prefix that says what it is
// ("pgk_" an API key, "pgd_" a device token).
func newSecret(prefix string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: random: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}
