// Package fleet is the hub's fleet page (docs/HUB.md, "Fleet page"): the
// page a chain's managers open on a phone or a desk. A user of a tenant
// (printgate-hub user add) signs in and sees the tenant's stores online or
// offline, their printers, the jobs that need someone in red with their
// timelines, reprints and cancels them, follows a store's agent's log
// (the order API's log tail, hub/api OpenTail), and approves the pairing code an
// agent shows as a QR (PROTOCOL.md §6: the code's verification_uri is
// this package's /fleet/pair). It speaks English and Chinese.
//
// It guards itself as the agent's manager page does (agent/web): a Host
// check against DNS rebinding and a cross-origin check on every POST, a
// CSRF token on every form, a session cookie that is HttpOnly,
// SameSite=Strict and Secure under TLS, and a throttle on wrong passwords
// per address and per user. A user reaches only their own tenant's
// stores: another tenant's store, job or pairing is answered as one that
// does not exist.
package fleet
