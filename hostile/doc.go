// Package hostile is the attack suite: every attack a pen-test or a review
// once carried out against the agent, kept as a test that runs the real
// printgate binary over loopback and fails if the attack works again.
//
// The package has no code of its own; its tests are in *_test.go, one file
// per kind of attacker (a page in the manager's browser, a guest on the
// store's Wi-Fi, a hostile POS on the raw port, a compromised cloud). They
// use only the public contract: the CLI, the config, the HTTP API, the
// websocket and printers on TCP.
package hostile
