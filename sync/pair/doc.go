// Package pair pairs the agent with the cloud and keeps the device token it
// earns (docs/PROTOCOL.md §6): the OAuth 2.0 device authorization grant of
// RFC 8628, client_id "printgate", with the endpoints {auth_url}/device/code
// and {auth_url}/token.
//
// [Start] asks the cloud for a code; the [Pending] it returns carries the
// user code and the address a manager opens (shown as a QR by [QRText]).
// [Pending.Wait] polls until the manager approves, honouring
// authorization_pending and slow_down, and ends with [ErrExpired] or
// [ErrDenied] when the cloud says so. [Save] stores the token in the data
// dir, [Load] reads it back and [Remove] forgets it.
//
// The device code request goes through golang.org/x/oauth2 (Config.
// DeviceAuth). The polling does not: oauth2's DeviceAccessToken waits on a
// real time.Ticker of at least one second and cannot report progress, so
// Wait polls on an injected clock (internal/clock) and sends each token request
// itself, reporting cloud refusals as *oauth2.RetrieveError like oauth2 does.
//
// There is no watcher: Load is one read of a small file, so the cloud link
// calls it before every connect attempt (and, while unpaired, on its retry
// cadence) and so picks up a token that `printgate pair` saved while the
// agent was running, without a restart.
package pair
