package localapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"printgate/agent/api"
	"printgate/agent/hostcheck"
	"printgate/agent/lockout"
)

// requireToken lets a request through only with the right bearer token;
// see authorize.
func (s *server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authorize(w, r, "") {
			next.ServeHTTP(w, r)
		}
	})
}

// authorize reports whether r may pass: exactly when it carries the right
// token, checked first, so no lockout ever refuses the POS that has it (the
// token is long and random: letting it through tells a guesser nothing).
// Otherwise it has answered: 429 with Retry-After while r's client address
// is locked out for r's Host, else 401 with the WWW-Authenticate challenge
// RFC 6750 asks for, its message followed by hint. A wrong token counts
// against the client address and Host; a missing or malformed header does
// not, since it guesses nothing.
func (s *server) authorize(w http.ResponseWriter, r *http.Request, hint string) bool {
	e, wrong := s.checkToken(r)
	if e == nil {
		return true
	}
	addr := lockout.ClientAddr(r)
	if left := s.throttle.LockedFor(addr, r.Host); left > 0 {
		s.tooManyRequests(w, left)
		return false
	}
	if wrong && s.throttle.Fail(addr, r.Host) {
		// Once per lockout of each client: a guesser with many addresses
		// would write one each.
		s.peerLines.Warn(s.log, "local API: too many wrong tokens from one client; refusing its requests without the right token for a while",
			slog.String("client", addr.String()),
			slog.String("host", hostcheck.Normalize(r.Host)),
			slog.Int("wrong_tokens", AuthFailureLimit),
			slog.Duration("within", AuthFailureWindow),
			slog.Duration("refused_for", AuthFailureWindow),
		)
	}
	e.message += hint
	s.unauthorized(w, e)
	return false
}

// checkToken returns nil when r carries the configured token, else the 401
// to answer with and whether r presented a token that was wrong (a guess,
// which the throttle counts).
func (s *server) checkToken(r *http.Request) (*apiError, bool) {
	if !s.hasToken {
		return newError(http.StatusUnauthorized, api.CodeUnauthorized, "this agent has no api_token configured, so its API is closed; set api_token in the agent's config"), false
	}
	got, ok := bearer(r)
	if !ok && emptyBearer(r) {
		return newError(http.StatusUnauthorized, api.CodeUnauthorized, "the token sent was empty: the header says \"Authorization: Bearer\" with nothing after it, so whatever read the token read nothing (a token file this account may not read, a variable not set); send the agent's api_token after \"Bearer \""), false
	}
	if !ok {
		return newError(http.StatusUnauthorized, api.CodeUnauthorized, "send the agent's api_token as the header \"Authorization: Bearer <token>\""), false
	}
	// Hash first so the comparison is over two 32-byte values: neither the
	// token's bytes nor its length can be learnt from the timing.
	sum := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) != 1 {
		return newError(http.StatusUnauthorized, api.CodeUnauthorized, "the bearer token is not this agent's api_token; check the POS configuration against the agent's config"), true
	}
	return nil, false
}

func (s *server) unauthorized(w http.ResponseWriter, e *apiError) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="printgate"`)
	writeError(w, e)
}

// tooManyRequests answers 429 to a locked-out client, with Retry-After in
// whole seconds (rounded up) until its lockout ends.
func (s *server) tooManyRequests(w http.ResponseWriter, left time.Duration) {
	secs := int64((left + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	writeError(w, newError(http.StatusTooManyRequests, api.CodeTooManyRequests,
		"this address sent %d wrong api_tokens within %d seconds, so the agent refuses its requests that lack the right token for %d more seconds; check the token in the POS configuration against the agent's config, then retry",
		AuthFailureLimit, int(AuthFailureWindow/time.Second), secs))
}

// bearer extracts the token from "Authorization: Bearer <token>"; the scheme
// is case-insensitive (RFC 7235).
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = normalizeToken(token)
	return token, token != ""
}

// emptyBearer reports whether r's Authorization header names the Bearer
// scheme with no token after it, as a shell sends "Bearer $TOKEN" when
// TOKEN is empty (net/http trims the trailing space away).
func emptyBearer(r *http.Request) bool {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return strings.EqualFold(scheme, "Bearer") && normalizeToken(rest) == ""
}

// normalizeToken is applied to both the configured token and the presented
// one, so they are compared in the same form: HTTP already strips white
// space around a header value, and a config file easily keeps some (a
// trailing space or a newline in api_token), which would otherwise make the
// configured token impossible to send.
func normalizeToken(tok string) string {
	return strings.TrimSpace(tok)
}

// fromLoopback reports whether r came from this machine (127.0.0.0/8, ::1
// or an IPv4-mapped loopback address). A reverse proxy on the same machine
// makes every request look local; printgate does not sit behind one.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
