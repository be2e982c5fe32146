package installer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kardianos/service"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"
)

// serviceOptions: start with Windows, as its own process.
func serviceOptions(exe, configPath string) service.KeyValue {
	return service.KeyValue{"StartType": service.ServiceStartAutomatic}
}

// NoServiceManager says why there is no service manager to ask, or "".
func NoServiceManager() string { return "" }

// AdminHint is what to add to a service command's error: how to run it
// with the rights it needs.
func AdminHint() string { return " (run it from an Administrator command prompt)" }

// CheckServicePaths refuses paths the service could not use; none here.
func CheckServicePaths(exe, configPath string) error { return nil }

// RegisterService creates the service through kardianos (automatic start,
// event-log source) and then sets the recovery policy, which kardianos can
// only set to a single delay.
func RegisterService(s service.Service, w io.Writer) error {
	if err := s.Install(); err != nil {
		if !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("install the service: %w", err)
		}
		fmt.Fprintln(w, "service already installed; updating its recovery actions")
	} else {
		fmt.Fprintln(w, "service installed: starts with Windows")
	}
	if err := eventlog.InstallAsEventCreate(ServiceName, eventlog.Error|eventlog.Warning|eventlog.Info); err != nil && !strings.Contains(err.Error(), "exists") {
		return fmt.Errorf("register the event-log source: %w", err)
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("connect to the service manager: %w", err)
	}
	defer m.Disconnect()
	ms, err := m.OpenService(ServiceName)
	if err != nil {
		return fmt.Errorf("open the service: %w", err)
	}
	defer ms.Close()
	if err := ms.SetRecoveryActions(recoveryActions(), uint32(WindowsRecoveryReset/time.Second)); err != nil {
		return fmt.Errorf("set the recovery actions: %w", err)
	}
	// Also when the agent exits with an error rather than crashing.
	if err := ms.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("set the recovery actions: %w", err)
	}
	fmt.Fprintln(w, "recovery: restart after 5 s, 30 s, then every 60 s; counts reset after a day without failure")
	return nil
}

func recoveryActions() []mgr.RecoveryAction {
	var out []mgr.RecoveryAction
	for _, s := range WindowsRecovery() {
		out = append(out, mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: s.Delay})
	}
	return out
}

// UnregisterService removes the service.
func UnregisterService(s service.Service, w io.Writer) error {
	if err := s.Uninstall(); err != nil {
		return fmt.Errorf("remove the service: %w", err)
	}
	return nil
}

// UnderServiceManager reports that the SCM started this process: `run`
// must then answer the SCM's control requests.
func UnderServiceManager() bool {
	ok, err := svc.IsWindowsService()
	return err == nil && ok
}

// winProgram runs the agent for the SCM: Start launches it, Stop cancels
// it and waits for the in-flight tickets to settle; start, stop and fatal
// errors go to the Windows event log under the source "printgate".
type winProgram struct {
	configPath string
	run        func(ctx context.Context) error
	elog       *eventlog.Log

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

// stopWait bounds Stop: the agent finishes jobs in flight (their own
// timeout is 30 s by default) before it closes the spool.
const stopWait = 40 * time.Second

func (p *winProgram) Start(service.Service) error {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cancel, p.done = cancel, make(chan error, 1)
	p.mu.Unlock()
	go func() {
		err := p.run(ctx)
		if ctx.Err() == nil {
			// The agent ended by itself: a fatal error. Exiting non-zero
			// makes the SCM run the recovery actions.
			if err == nil {
				err = errors.New("the agent stopped without being asked")
			}
			p.event(EventFailed, "printgate stopped on an error and will be restarted by the service manager: "+err.Error())
			os.Exit(1)
		}
		p.done <- err
	}()
	p.event(EventStarted, "printgate started with the config "+p.configPath)
	return nil
}

func (p *winProgram) Stop(service.Service) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			p.event(EventFailed, "printgate stopped with an error: "+err.Error())
			return err
		}
	case <-time.After(stopWait):
		p.event(EventFailed, fmt.Sprintf("printgate did not stop within %v; the service manager ends it", stopWait))
		return fmt.Errorf("the agent did not stop within %v", stopWait)
	}
	p.event(EventStopped, "printgate stopped")
	return nil
}

func (p *winProgram) event(id uint32, msg string) {
	if p.elog == nil {
		return
	}
	if id == EventFailed {
		_ = p.elog.Error(id, msg)
		return
	}
	_ = p.elog.Info(id, msg)
}

// RunUnderServiceManager runs the agent (run, until its context ends) as
// the SCM's service for the config at configPath, until the SCM stops it.
func RunUnderServiceManager(configPath string, run func(ctx context.Context) error) error {
	p := &winProgram{configPath: configPath, run: run}
	if l, err := eventlog.Open(ServiceName); err == nil {
		p.elog = l
		defer l.Close()
	}
	exe, err := Executable()
	if err != nil {
		return err
	}
	s, err := newServiceFor(p, exe, configPath)
	if err != nil {
		p.event(EventFailed, err.Error())
		return err
	}
	if err := s.Run(); err != nil {
		p.event(EventFailed, "printgate service: "+err.Error())
		return err
	}
	return nil
}
