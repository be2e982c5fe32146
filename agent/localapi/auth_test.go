package localapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"printgate/agent/localapi"
)

// TestTokenTrimmed ensures the configured token and the presented one are
// trimmed the same way: an api_token written with stray white space (a
// trailing space, a newline) matches the token a POS sends, a token that is
// only white space closes the API, and trimming never makes a different
// token match.
func TestTokenTrimmed(t *testing.T) {
	for _, tc := range []struct {
		configured, presented string
		status                int
	}{
		{"tok ", "Bearer tok", 200},
		{" tok\n", "Bearer tok", 200},
		{"\ttok\r\n", "Bearer tok", 200},
		{"tok", "Bearer  tok \t", 200},
		{"tok ", "Bearer tok ", 200},
		{"tok ", "Bearer to", 401},
		{"to k", "Bearer tok", 401},
		{"tok", "Bearer t ok", 401},
		{" \t\n", "Bearer  ", 401},
		{" \t\n", "Bearer x", 401},
	} {
		c := newAPI(t, newFake(), localapi.Options{Token: tc.configured})
		c.auth = tc.presented
		a := c.do("GET", "/api/v1/printers", "")
		if a.status != tc.status {
			t.Errorf("configured %q, presented %q: %d %s, want %d", tc.configured, tc.presented, a.status, a.body, tc.status)
		}
		if strings.TrimSpace(tc.configured) == "" && !strings.Contains(a.message(), "no api_token configured") {
			t.Errorf("configured %q: message %q does not say the API has no token", tc.configured, a.message())
		}
	}
}

// TestTokenTrimmedOverTheWire ensures the configured token with a trailing
// space works over a real connection, where net/http strips the white space
// around the header value before the API sees it.
func TestTokenTrimmedOverTheWire(t *testing.T) {
	srv := newLoopbackServer(t, localapi.New(newFake(), localapi.Options{Token: "tok "}))
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/printers", nil)
	req.Header.Set("Authorization", "Bearer tok ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("configured \"tok \", sent \"Bearer tok \": %d, want 200", resp.StatusCode)
	}
}

// TestEmptyTokenSaysSo ensures a 401 says when the token sent was empty:
// `curl -H "Authorization: Bearer $TOKEN"` with a TOKEN the shell could not
// read (the token file is the service's, and sudo is not everywhere) sends
// "Bearer " and nothing more, which was answered as if no header came, and
// the person looked for a wrong token instead of an unread file. A missing
// header and a wrong token keep their own answers.
func TestEmptyTokenSaysSo(t *testing.T) {
	srv := newLoopbackServer(t, localapi.New(newFake(), localapi.Options{Token: testToken}))
	for _, tc := range []struct {
		auth string // "-": no header
		want string
	}{
		{"Bearer ", "token sent was empty"},
		{"Bearer", "token sent was empty"},
		{"bearer \t", "token sent was empty"},
		{"-", "send the agent's api_token as the header"},
		{"Bearer wrong", "is not this agent's api_token"},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/printers", nil)
		if tc.auth != "-" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), tc.want) {
			t.Errorf("Authorization %q: %d %s, want 401 saying %q", tc.auth, resp.StatusCode, body, tc.want)
		}
	}
}
