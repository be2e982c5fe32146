package logring

import (
	"encoding"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"unicode"
)

// Redacted is what a secret is replaced with; the same text
// [printgate/agent/config.Secret] prints.
const Redacted = "[redacted]"

// secretWords are the key words that mark an attribute, or a key=value pair in
// free text, as a credential. A key matches when one of its words (split at
// punctuation and camelCase) is in this set.
var secretWords = map[string]bool{
	"token": true, "tokens": true, "apikey": true, "key": true, "keys": true,
	"pin": true, "password": true, "passwd": true, "passphrase": true, "pwd": true,
	"secret": true, "secrets": true, "credential": true, "credentials": true,
	"authorization": true, "auth": true, "cookie": true, "cookies": true,
	"csrf": true, "session": true,
}

// secretSuffixes catch run-together keys such as "devicetoken".
var secretSuffixes = []string{"token", "password", "secret", "apikey"}

// notSecretLast are last words that make a key name something about a secret
// rather than the secret itself ("api_token_file" is a path). Their values
// are still scrubbed as free text.
var notSecretLast = map[string]bool{
	"file": true, "path": true, "dir": true, "url": true,
	"count": true, "len": true, "length": true, "size": true,
}

// keyWords splits a key into lower-case words at every non-letter-or-digit
// and at each lower-to-upper camelCase step: "X-Api-Key" and "apiKey" give
// [x api key] and [api key].
func keyWords(key string) []string {
	var words []string
	var cur []rune
	prevLower := false
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, c := range key {
		switch {
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(c) && prevLower:
			flush()
		}
		cur = append(cur, c)
		prevLower = unicode.IsLower(c) || unicode.IsDigit(c)
	}
	flush()
	return words
}

// secretKey reports whether key names a credential.
func secretKey(key string) bool {
	words := keyWords(key)
	if len(words) == 0 || (len(words) > 1 && notSecretLast[words[len(words)-1]]) {
		return false
	}
	for _, w := range words {
		w = strings.TrimRight(w, "0123456789") // "token2", "pin1"
		if secretWords[w] {
			return true
		}
		for _, s := range secretSuffixes {
			if strings.HasSuffix(w, s) {
				return true
			}
		}
	}
	return false
}

var (
	// headerRe matches a credential-carrying HTTP header and the rest of its
	// line: "Authorization: Bearer x", "Cookie: a=1; b=2".
	headerRe = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization|(?:set-)?cookie|x-api-key)("?\s*[:=]\s*)[^\r\n]*`)
	// bearerRe matches a bearer credential anywhere: "Bearer abc.def".
	bearerRe = regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9\-._~+/=]+`)
	// keySepRe matches the key and separator of a key=value or key: value
	// pair, in query strings, logfmt, JSON ("key":"value") and Go's %+v of
	// structs and maps. It stops before the value so that a pair inside
	// another pair's value ("login failed: token=…") is still found.
	keySepRe = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.\-]*)("?'?\s*[:=]\s*)`)
	// valueRe matches the value that follows a secret key: quoted,
	// bracketed, or a run up to the next separator (after a quote that is
	// never closed, if any).
	valueRe = regexp.MustCompile(`^(?:"[^"]*"|'[^']*'|\[[^\]]*\]|["']?[^\s&,;"'\[\]{}()<>]+)`)
	// jwtRe matches a JSON web token on its own.
	jwtRe = regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*`)
)

// Scrub returns s with the credentials found in free text replaced by
// [Redacted]: the value of an Authorization, Cookie or X-Api-Key header (to
// the end of its line), a "Bearer <credential>", the value of any key=value
// or key: value pair whose key looks secret ("token=…", "pin: …",
// `"device_token":"…"`), and bare JSON web tokens.
func Scrub(s string) string {
	s = headerRe.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = bearerRe.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = scrubPairs(s)
	return jwtRe.ReplaceAllString(s, Redacted)
}

// ReplaceAttr is the redaction the ring applies to every attribute, shaped
// for [slog.HandlerOptions].ReplaceAttr so the agent's file and console
// handlers can apply the same rule. An attribute whose key, or any group it
// sits in, looks secret (token, api_token, pin, password, secret,
// authorization, cookie, key, … in any case) becomes [Redacted], whatever
// its kind; other text (strings, errors, and anything else printed with
// %+v) is passed through [Scrub]. Values that implement [slog.LogValuer],
// such as config.Secret, are already resolved when slog calls it.
func ReplaceAttr(groups []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindGroup {
		return a
	}
	if secretKey(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	for _, g := range groups {
		if secretKey(g) {
			return slog.String(a.Key, Redacted)
		}
	}
	switch a.Value.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Scrub(a.Value.String()))
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case slog.Level, *slog.Source:
			return a // slog's own level and source attributes
		default:
			return slog.String(a.Key, Scrub(anyText(v)))
		}
	}
	return a
}

// anyText renders a value the way slog's text handler does.
func anyText(v any) string {
	switch v := v.(type) {
	case nil:
		return "<nil>"
	case error:
		return v.Error()
	case encoding.TextMarshaler:
		b, err := v.MarshalText()
		if err != nil {
			return "!ERROR:" + err.Error()
		}
		return string(b)
	case []byte:
		return string(v)
	}
	return fmt.Sprintf("%+v", v)
}

// scrubPairs replaces the value of every pair in s whose key looks secret.
func scrubPairs(s string) string {
	var out strings.Builder
	last := 0
	for _, m := range keySepRe.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[0], m[1]
		if !secretKey(s[m[2]:m[3]]) || inPath(s, start, s[m[4]:m[5]]) {
			continue
		}
		val := valueRe.FindString(s[end:])
		if val == "" || strings.Trim(val, `"'`) == Redacted || wrappedError(s[m[4]:m[5]], val) {
			continue
		}
		if start < last {
			// A pair inside the value just redacted ("token: token: x"):
			// the redaction runs on to the end of its value too.
			last = max(last, end+len(val))
			continue
		}
		out.WriteString(s[last:end])
		q := val[0]
		if q == '"' || q == '\'' {
			out.WriteByte(q)
		}
		out.WriteString(Redacted)
		if (q == '"' || q == '\'') && len(val) > 1 && val[len(val)-1] == q {
			out.WriteByte(q)
		}
		last = end + len(val)
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// inPath reports whether the key found at start, followed by the colon of
// sep, is the last part of a file path ("/var/lib/printgate/manager-pin:
// open …"): a file's name and not a key, followed by an error, not a
// secret. A path before "=" ("/x/token=…") is still taken for a key.
func inPath(s string, start int, sep string) bool {
	return start > 0 && (s[start-1] == '/' || s[start-1] == '\\') && strings.HasPrefix(sep, ":")
}

// errorWords are words that start the reason of a wrapped Go error ("load
// the device token: open /…: no such file"), never a token, API token or
// PIN: those are random, or at least 6 characters a person chose to type.
var errorWords = map[string]bool{
	"open": true, "read": true, "write": true, "stat": true, "lstat": true, "mkdir": true,
	"chmod": true, "chown": true, "remove": true, "rename": true, "sync": true, "close": true,
	"dial": true, "permission": true, "no": true, "not": true, "is": true, "the": true,
	"invalid": true, "unexpected": true, "context": true, "connection": true, "cannot": true,
	"missing": true, "empty": true, "expired": true, "denied": true, "refused": true,
	"timeout": true, "operation": true, "too": true, "has": true, "was": true, "must": true,
	"eof": true, "unknown": true, "wrong": true, "failed": true, "none": true, "it": true,
}

// wrappedError reports whether val, after the separator sep, is the start
// of a wrapped error's reason rather than a secret: only after ": ", Go's
// wrapping, and only an ordinary lower-case word of errorWords. "token=open"
// and "token:open" stay hidden.
func wrappedError(sep, val string) bool {
	return sep == ": " && errorWords[val] && strings.ToLower(val) == val
}
