package localapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// requireToken lets a request through only with the right bearer token and
// answers 401 otherwise, with the WWW-Authenticate challenge RFC 6750 asks
// for.
func (s *server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := s.checkToken(r); e != nil {
			s.unauthorized(w, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkToken returns nil when r carries the configured token, else the 401
// to answer with.
func (s *server) checkToken(r *http.Request) *apiError {
	if !s.hasToken {
		return newError(http.StatusUnauthorized, CodeUnauthorized, "this agent has no api_token configured, so its API is closed; set api_token in the agent's config")
	}
	got, ok := bearer(r)
	if !ok {
		return newError(http.StatusUnauthorized, CodeUnauthorized, "send the agent's api_token as the header \"Authorization: Bearer <token>\"")
	}
	// Hash first so the comparison is over two 32-byte values: neither the
	// token's bytes nor its length can be learnt from the timing.
	sum := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) != 1 {
		return newError(http.StatusUnauthorized, CodeUnauthorized, "the bearer token is not this agent's api_token; check the POS configuration against the agent's config")
	}
	return nil
}

func (s *server) unauthorized(w http.ResponseWriter, e *apiError) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="printgate"`)
	writeError(w, e)
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
