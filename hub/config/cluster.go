package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
)

// DefaultClusterName is the cluster's name when [cluster] sets none; every
// node of one cluster must carry the same name.
const DefaultClusterName = "printgate-hub"

// Cluster is the [cluster] table: this node's place in a cluster of hub
// nodes whose embedded engines replicate every bucket (JetStream
// clustering). Without the table the hub is one node.
type Cluster struct {
	// Name is the cluster's name, the same on every node (default
	// DefaultClusterName).
	Name string
	// Listen is the address this node takes routes from the other nodes
	// on (host:port, required).
	Listen string
	// Peers are the other nodes' route addresses, as host:port; this
	// node's own address may be listed too (the same list on every node)
	// and is then skipped. The engine routes to these only.
	Peers []string
	// TLSCert, TLSKey and TLSCA are PEM files (relative to the config
	// file): with them every route is TLS both ways, each node showing
	// its certificate and accepting only peers whose certificate TLSCA
	// signed.
	TLSCert, TLSKey, TLSCA string
}

// parseCluster reads the [cluster] table into cfg.Cluster.
func (p *parser) parseCluster(path string, raw map[string]any, cfg *Config) {
	v, ok := raw["cluster"]
	if !ok {
		return
	}
	t, isTable := v.(map[string]any)
	if !isTable {
		p.add("cluster", "cluster must be a table: [cluster] with listen = \"10.0.0.1:6222\" and peers = [\"10.0.0.2:6222\", \"10.0.0.3:6222\"]")
		return
	}
	p.unknown("cluster", t)
	c := &Cluster{Name: DefaultClusterName}
	if n, ok := p.str("cluster", t, "name"); ok {
		if n == "" || strings.ContainsAny(n, " \t.*>") {
			p.add("cluster.name", fmt.Sprintf("name %q in [cluster] must be one word without spaces, dots, * or >, e.g. \"printgate-hub\", the same on every node", n))
		} else {
			c.Name = n
		}
	}
	if l, ok := p.str("cluster", t, "listen"); ok {
		if _, port, err := net.SplitHostPort(l); err != nil || port == "" || port == "0" {
			p.add("cluster.listen", fmt.Sprintf("listen %q in [cluster] is not host:port; write the address the other nodes reach this one on, e.g. \"10.0.0.1:6222\"", l))
		} else {
			c.Listen = l
		}
	} else if _, wrote := t["listen"]; !wrote {
		p.add("cluster", "[cluster] has no listen; add listen = \"10.0.0.1:6222\" (the address the other nodes reach this node's routes on)")
	}
	peersOK := false
	if pv, ok := t["peers"]; ok {
		list, isList := pv.([]any)
		for _, x := range list {
			s, isStr := x.(string)
			a := strings.TrimPrefix(s, "nats-route://")
			if _, port, err := net.SplitHostPort(a); !isStr || err != nil || port == "" || strings.ContainsAny(a, "/@") {
				isList = false
				break
			}
			if a != c.Listen {
				c.Peers = append(c.Peers, a)
			}
		}
		peersOK = isList
		if !isList {
			p.add("cluster.peers", "peers in [cluster] must be a list of the other nodes' route addresses in quotes, e.g. [\"10.0.0.2:6222\", \"10.0.0.3:6222\"]")
		}
	}
	if _, wrote := t["peers"]; !wrote {
		p.add("cluster", "[cluster] has no peers; add peers = [\"10.0.0.2:6222\", \"10.0.0.3:6222\"] (the other nodes' cluster listen addresses)")
	} else if peersOK && len(c.Peers) == 0 {
		p.add("cluster.peers", "peers in [cluster] names no other node; list the other nodes' cluster listen addresses, or remove [cluster] to run one node")
	}
	files := map[string]*string{"tls_cert": &c.TLSCert, "tls_key": &c.TLSKey, "tls_ca": &c.TLSCA}
	for _, k := range []string{"tls_cert", "tls_key", "tls_ca"} {
		f, ok := p.str("cluster", t, k)
		if !ok {
			continue
		}
		if f == "" {
			p.add("cluster."+k, k+" in [cluster] is empty; name a PEM file, or leave tls_cert, tls_key and tls_ca out for plain routes")
			continue
		}
		if !filepath.IsAbs(f) {
			f = filepath.Join(filepath.Dir(path), f)
		}
		*files[k] = f
	}
	if n := count(c.TLSCert != "", c.TLSKey != "", c.TLSCA != ""); n != 0 && n != 3 {
		at := "cluster.tls_cert"
		for _, k := range []string{"tls_ca", "tls_key", "tls_cert"} {
			if _, set := t[k]; set {
				at = "cluster." + k
			}
		}
		p.add(at, "tls_cert, tls_key and tls_ca in [cluster] go together: set all three (this node's certificate, its key, and the CA that signed every node's certificate) or none")
	}
	if cfg.Node == "" {
		p.add("cluster", "[cluster] needs this node's name: add node = \"hub-1\" at the top (a name no other node of the cluster has, kept across restarts)")
	}
	cfg.Cluster = c
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
