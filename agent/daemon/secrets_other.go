//go:build !windows

package daemon

import (
	"log/slog"

	"printgate/agent/config"
)

// guardSecretsACL is Windows' half of guardSecrets; elsewhere mode bits
// are the whole story.
func guardSecretsACL(*config.Config, *slog.Logger) {}
