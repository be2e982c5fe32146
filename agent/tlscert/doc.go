// Package tlscert provides the certificate for TLS on the agent's local
// listener (PROTOCOL.md §3): a self-signed one the agent makes once and keeps
// in its data directory, or a pair the store's IT supplies. Either way the
// caller gets the SHA-256 fingerprint of the certificate, which
// `printgate run` prints at start so a POS integrator can pin it: a
// self-signed certificate is trusted by comparing that fingerprint, not by
// a certificate authority.
//
// The package has no agent imports; it only reads and writes the two PEM
// files it is told about.
package tlscert
