// Package webhook sends the hub's webhooks: every state change of a job
// (hub/store queues one delivery per endpoint of the job's tenant, on
// disk, before the change is answered) is POSTed to the endpoint signed as
// the Standard Webhooks specification says (webhook-id, webhook-timestamp,
// webhook-signature), at least once, retried with exponential backoff and
// jitter for at least MaxAge (a day), then kept as a dead letter an
// operator replays. It also makes endpoints' secrets and checks their URLs.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret, as Standard Webhooks libraries
// expect.
const SecretPrefix = "whsec_"

// secretBytes is the random part of a secret: Standard Webhooks asks for
// 24 to 64 bytes.
const secretBytes = 32

// NewSecret makes a signing secret: whsec_ and the base64 of 32 random
// bytes.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// NewID makes an endpoint id: ep_ and 12 random bytes in hex.
func NewID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: id: %w", err)
	}
	return "ep_" + hex.EncodeToString(b), nil
}

// ErrBadURL is wrapped by CheckURL's errors; their text says the fix.
var ErrBadURL = errors.New("bad webhook URL")

// maxURLBytes bounds an endpoint's URL.
const maxURLBytes = 2048

// CheckURL accepts an https URL, or an http URL to a loopback host
// (127.0.0.0/8, ::1, localhost) for tests and a receiver on the hub's own
// machine: a webhook carries a tenant's orders, so it never crosses a
// network in clear text.
func CheckURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: url is required: give the https URL of your receiver, e.g. https://orders.example.com/printgate", ErrBadURL)
	}
	if len(raw) > maxURLBytes {
		return fmt.Errorf("%w: the URL is over %d bytes; use a shorter one", ErrBadURL, maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: %q is not an absolute URL; give it as https://host/path", ErrBadURL, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%w: the URL carries a user or password; remove it: the signature authenticates the hub", ErrBadURL)
	}
	if u.Fragment != "" {
		return fmt.Errorf("%w: the URL has a #fragment, which is never sent; remove it", ErrBadURL)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%w: %s is http to a host that is not loopback; use https:// (http:// only to 127.0.0.1, ::1 or localhost)", ErrBadURL, raw)
	default:
		return fmt.Errorf("%w: scheme %q; use https://", ErrBadURL, u.Scheme)
	}
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Sign returns the webhook-signature header value of a message:
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>", keyed with the
// base64-decoded part of secret after whsec_.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhook: secret is not base64: %w", err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// Verify checks a delivery's signature headers as a receiver would (for
// the hub's own tests and tools; receivers use their Standard Webhooks
// library). tolerance bounds the timestamp's distance from now.
func Verify(secret, id, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: timestamp %q: %w", timestamp, err)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook: timestamp %v is %v from now", ts, d)
	}
	want, err := Sign(secret, id, ts, body)
	if err != nil {
		return err
	}
	for _, s := range strings.Fields(signature) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook: no signature matches")
}
