//go:build !linux && !windows

package installer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kardianos/service"
)

// printgate ships for Linux and Windows; on other systems (a developer's
// Mac) the service commands use kardianos's defaults without sandbox or
// service account.

func serviceOptions(exe, configPath string) service.KeyValue { return nil }

// NoServiceManager says why there is no service manager to ask, or "".
func NoServiceManager() string { return "" }

// AdminHint is what to add to a service command's error: how to run it
// with the rights it needs.
func AdminHint() string { return "" }

// CheckServicePaths refuses paths the service could not use; none here.
func CheckServicePaths(exe, configPath string) error { return nil }

// RegisterService installs the service through kardianos.
func RegisterService(s service.Service, exe, configPath string, w io.Writer) error {
	if err := s.Install(); err != nil {
		return fmt.Errorf("install the service: %w", err)
	}
	return nil
}

// UnregisterService removes the service.
func UnregisterService(s service.Service, w io.Writer) error {
	if err := s.Uninstall(); err != nil {
		return fmt.Errorf("remove the service: %w", err)
	}
	return nil
}

// UnderServiceManager is false: only Windows has an SCM to answer.
func UnderServiceManager() bool { return false }

// RunUnderServiceManager is for Windows only: `run --service` is the
// command line of the Windows service.
func RunUnderServiceManager(string, func(context.Context) error) error {
	return errors.New("--service is for the Windows service manager only; here the agent runs with printgate run")
}

// ServiceArguments is the command line the service runs the binary with.
func ServiceArguments(configPath string) []string { return []string{"run", "--config", configPath} }

// AdminHintFor is what to add to the error err of a service command:
// AdminHint, which is nothing here.
func AdminHintFor(err error) string { return AdminHint() }

// controlService is Control through kardianos.
func controlService(s service.Service, action string) (string, error) {
	return kardianosControl(s, action)
}
