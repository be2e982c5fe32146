package config

import (
	"slices"
	"strings"
	"testing"
)

// TestAllowedHosts ensures allowed_hosts is read as a list of names, and
// anything else (a string, a URL) is refused at its line with the form to
// write.
func TestAllowedHosts(t *testing.T) {
	cfg, err := Parse("hub.toml", []byte("data_dir = \"d\"\nallowed_hosts = [\"hub.example.com\", \"10.0.0.5\"]\n"))
	if err != nil || !slices.Equal(cfg.AllowedHosts, []string{"hub.example.com", "10.0.0.5"}) {
		t.Fatalf("got %v, %v", cfg, err)
	}
	for _, bad := range []string{`"hub.example.com"`, `["https://hub.example.com/"]`, `[1]`} {
		_, err := Parse("hub.toml", []byte("data_dir = \"d\"\nallowed_hosts = "+bad+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "hub.toml:2: allowed_hosts must be a list of host names") {
			t.Errorf("allowed_hosts = %s: %v", bad, err)
		}
	}
}
