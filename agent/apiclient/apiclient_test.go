package apiclient

import (
	"testing"

	"printgate/agent/config"
)

// TestAgentURL ensures the page and API address derived from listen.
func TestAgentURL(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:8631":  "http://127.0.0.1:8631",
		":8631":           "http://127.0.0.1:8631",
		"0.0.0.0:9000":    "http://127.0.0.1:9000",
		"[::]:8631":       "http://127.0.0.1:8631",
		"192.168.1.10:80": "http://192.168.1.10:80",
		"[::1]:8631":      "http://[::1]:8631",
		"pos-pc.lan:8631": "http://pos-pc.lan:8631",
	} {
		if got := URL(&config.Config{Listen: listen}); got != want {
			t.Errorf("listen %q: %q, want %q", listen, got, want)
		}
	}
}
