package hostile

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
)

// deviceCode asks the hub for a pairing code as `printgate pair` does and
// returns the user code.
func (h *Hub) deviceCode(t *testing.T) (userCode, deviceCode string) {
	t.Helper()
	resp, err := h.client.PostForm(h.Base+"/oauth/device/code", url.Values{"client_id": {"printgate"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dc struct {
		UserCode   string `json:"user_code"`
		DeviceCode string `json:"device_code"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &dc); err != nil || dc.UserCode == "" {
		t.Fatalf("device code: %d %s (%v)", resp.StatusCode, b, err)
	}
	return dc.UserCode, dc.DeviceCode
}

// TestHubPairingCodeGuessesAreBounded guesses user codes with a tenant's
// key at the real hub, to claim an agent that waits to be paired for a
// store of the tenant's: the tenth unknown code within a minute is still
// 404, then every approval or refusal of that tenant is 429 with
// Retry-After for a minute, even of the right code (else the guesser
// would still learn the codes at the same rate); another tenant is not
// held up by the guesser; the waiting agent is not paired and its code is
// still pending.
func TestHubPairingCodeGuessesAreBounded(t *testing.T) {
	h := startHub(t)
	victim, victimDevice := h.deviceCode(t)
	guess := func(i int) string { return fmt.Sprintf("BCDF-%s", strings.Repeat(string("GHJKLMNPQR"[i%10]), 4)) }
	for i := range 10 {
		if guess(i) == victim {
			continue
		}
		code, body, _ := h.call(t, "POST", "/v1/stores/r1/pairings/"+guess(i)+"/approve", h.KeyRival, "")
		if code != 404 || hubErrCode(body) != "not_found" {
			t.Fatalf("guess %d: %d %s, want 404 not_found", i, code, trim(body))
		}
	}
	code, body, hdr := h.call(t, "POST", "/v1/stores/r1/pairings/"+victim+"/approve", h.KeyRival, "")
	if code != 429 || hubErrCode(body) != "too_many_requests" || hdr.Get("Retry-After") == "" {
		t.Errorf("the right code after 10 wrong guesses: %d %s Retry-After %q, want 429 too_many_requests", code, trim(body), hdr.Get("Retry-After"))
	}
	if code, body, _ := h.call(t, "POST", "/v1/stores/r1/pairings/"+victim+"/deny", h.KeyRival, ""); code != 429 {
		t.Errorf("deny after the guesses: %d %s, want 429", code, trim(body))
	}
	// The agent waiting to be paired is not: its poll is still pending.
	resp, err := h.client.PostForm(h.Base+"/oauth/token", url.Values{"client_id": {"printgate"}, "device_code": {victimDevice}, "grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "authorization_pending") {
		t.Errorf("the victim's poll: %d %s, want authorization_pending", resp.StatusCode, b)
	}
	// Another tenant is not held up by the guesser.
	if code, body, _ := h.call(t, "POST", "/v1/stores/a1/pairings/"+victim+"/approve", h.KeyAcme, ""); code != 200 {
		t.Errorf("acme approving its own agent's code: %d %s, want 200", code, trim(body))
	}
}
