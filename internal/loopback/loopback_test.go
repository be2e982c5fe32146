package loopback

import "testing"

// TestHost holds the loopback test to the names a clear cloud address may
// use, and refuses the private and public ones it must not.
func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.9.8.7": true, "::1": true,
		"192.168.1.10": false, "10.0.0.1": false, "print.example.com": false, "localhost.example.com": false, "": false, "::": false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}
