package installer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kardianos/service"
)

// agentProgram is what the service manager starts and stops when printgate
// runs as a Windows service (kardianos/service calls Start and Stop from
// the SCM's control handler). On Linux systemd just runs `printgate run`
// and stops it with SIGTERM, which run.go handles.
type agentProgram struct{}

func (agentProgram) Start(service.Service) error { return nil }
func (agentProgram) Stop(service.Service) error  { return nil }

// NewService returns the kardianos service for the agent running exe with
// the config at configPath (both absolute), with the OS's own options.
func NewService(exe, configPath string) (service.Service, error) {
	return newServiceFor(agentProgram{}, exe, configPath)
}

func newServiceFor(p service.Interface, exe, configPath string) (service.Service, error) {
	c := &service.Config{
		Name:        ServiceName,
		DisplayName: DisplayName,
		Description: Description,
		Executable:  exe,
		Arguments:   ServiceArguments(configPath),
		Option:      serviceOptions(exe, configPath),
	}
	s, err := service.New(p, c)
	if err != nil {
		return nil, fmt.Errorf("service manager: %w", err)
	}
	return s, nil
}

// Executable is the absolute, symlink-free path of this binary: what the
// service manager will run.
func Executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this program's path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, nil
}

// ServiceState describes kardianos's Status in words.
func ServiceState(s service.Service) string {
	if why := NoServiceManager(); why != "" {
		return why
	}
	st, err := s.Status()
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		return "not installed (printgate install)"
	case err != nil:
		return "unknown: " + err.Error()
	case st == service.StatusRunning:
		return "running"
	case st == service.StatusStopped:
		return "stopped (printgate start)"
	}
	return "unknown"
}

// Control starts, stops or restarts (action) the installed service of the
// config at configPath and says what it did ("started", "already
// stopped"...). A refusal of the service manager says how to run the
// command with the rights it needs.
func Control(action, configPath string) (string, error) {
	s, err := serviceOf(configPath)
	if err != nil {
		return "", err
	}
	return controlService(s, action)
}

// Uninstall stops the service of the config at configPath when it runs,
// and removes it (UnregisterService), saying on w what it did.
func Uninstall(configPath string, w io.Writer) error {
	s, err := serviceOf(configPath)
	if err != nil {
		return err
	}
	if st, err := s.Status(); err == nil && st == service.StatusRunning {
		if _, err := controlService(s, "stop"); err != nil {
			return fmt.Errorf("stop the service: %w", err)
		}
	}
	if err := UnregisterService(s, w); err != nil {
		return fmt.Errorf("%v%s", err, AdminHintFor(err))
	}
	return nil
}

// StateOf describes in words the state of the service of the config at
// configPath (ServiceState), "unknown" when it cannot be asked.
func StateOf(configPath string) string {
	s, err := serviceOf(configPath)
	if err != nil {
		return "unknown"
	}
	return ServiceState(s)
}

// serviceOf is the service running this binary with the config at
// configPath.
func serviceOf(configPath string) (service.Service, error) {
	exe, err := Executable()
	if err != nil {
		return nil, err
	}
	return NewService(exe, configPath)
}
