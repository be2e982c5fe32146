package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestParseCluster ensures a [cluster] table is read with its defaults,
// this node's own route address dropped from peers and the TLS files
// taken relative to the config file; without the table the hub is one
// node.
func TestParseCluster(t *testing.T) {
	cfg, err := Parse("hub.toml", []byte("data_dir = \"d\"\n"))
	if err != nil || cfg.Cluster != nil {
		t.Fatalf("no [cluster]: %+v, %v; want one node", cfg, err)
	}
	src := `data_dir = "d"
node = "hub-1"
[cluster]
listen = "10.0.0.1:6222"
peers = ["10.0.0.1:6222", "nats-route://10.0.0.2:6222", "10.0.0.3:6222"]
tls_cert = "c.pem"
tls_key = "k.pem"
tls_ca = "/etc/ca.pem"
`
	cfg, err = Parse(filepath.Join("etc", "hub.toml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster
	if c == nil || c.Name != DefaultClusterName || c.Listen != "10.0.0.1:6222" ||
		strings.Join(c.Peers, ",") != "10.0.0.2:6222,10.0.0.3:6222" ||
		c.TLSCert != filepath.Join("etc", "c.pem") || c.TLSKey != filepath.Join("etc", "k.pem") || c.TLSCA != "/etc/ca.pem" {
		t.Fatalf("cluster %+v", c)
	}
}

// TestParseClusterProblems ensures each mistake of a [cluster] table is
// reported at its line with what to write.
func TestParseClusterProblems(t *testing.T) {
	src := `data_dir = "d"
[cluster]
name = "a b"
listen = "nope"
peers = ["10.0.0.2"]
tls_cert = "c.pem"
rout = 1
`
	_, err := Parse("hub.toml", []byte(src))
	if err == nil {
		t.Fatal("a bad [cluster] was taken")
	}
	want := []string{
		"hub.toml:2: [cluster] needs this node's name",
		"hub.toml:3: name \"a b\" in [cluster] must be one word",
		"hub.toml:4: listen \"nope\" in [cluster] is not host:port",
		"hub.toml:5: peers in [cluster] must be a list",
		"hub.toml:6: tls_cert, tls_key and tls_ca in [cluster] go together",
		"hub.toml:7: unknown key cluster.rout",
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: %q, want it to start %q", i+1, lines[i], w)
		}
	}
	_, err = Parse("hub.toml", []byte("data_dir = \"d\"\nnode = \"n\"\n[cluster]\nlisten = \"10.0.0.1:6222\"\n"))
	if err == nil || !strings.Contains(err.Error(), "hub.toml:3: [cluster] has no peers") {
		t.Fatalf("no peers: %v", err)
	}
}
