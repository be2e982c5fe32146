package agent

import (
	"printgate/agent/localapi"
)

// The agent is the local API's backend (the page's is agent/daemon's
// pageBackend, which embeds it). The checks live in a test so that the core
// itself imports no adapter.
var (
	_ localapi.Backend  = (*Agent)(nil)
	_ localapi.Reloader = (*Agent)(nil)
)
