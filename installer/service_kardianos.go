//go:build !windows

package installer

import (
	"errors"
	"fmt"

	"github.com/kardianos/service"
)

// kardianosControl is Control through kardianos, where its service
// commands do what they say (systemd).
func kardianosControl(s service.Service, action string) (string, error) {
	if err := service.Control(s, action); err != nil {
		return "", fmt.Errorf("%v%s", unwrapControl(err), AdminHint())
	}
	return map[string]string{"start": "started", "stop": "stopped", "restart": "restarted"}[action], nil
}

// unwrapControl drops kardianos's "Failed to start printgate: " prefix
// when the cause says enough.
func unwrapControl(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
