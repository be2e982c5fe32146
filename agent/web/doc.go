// Package web is the manager page: what a restaurant manager opens on the
// store PC or a phone when a ticket did not come out, and what support reads
// when they are called (docs/DESIGN.md, "Local HTTP").
//
// It is served on the agent's one listener next to the intake API. Pages are
// rendered by the binary from html/template with embedded assets and a little
// vanilla JS, so the page works with the WAN down. A manager PIN (stored as an
// argon2id hash in the data dir) opens a session; the API's bearer token is
// never a page login.
package web
