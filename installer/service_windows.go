package installer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kardianos/service"
	"golang.org/x/sys/windows"
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

// AdminHintFor is AdminHint when err is an access denial, else "": other
// errors are not cured by an Administrator prompt.
func AdminHintFor(err error) string {
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return AdminHint()
	}
	return ""
}

// ServiceArguments is the command line the service runs the binary with:
// --service says it is the service, so `run` enters the service control
// handler without guessing (svc.IsWindowsService is wrong under Wine, which
// runs services in session 1, and can be wrong on Windows too).
func ServiceArguments(configPath string) []string {
	return []string{"run", "--service", "--config", configPath}
}

// CheckServicePaths refuses paths the service could not use; none here.
func CheckServicePaths(exe, configPath string) error { return nil }

// RegisterService creates the service s (exe with the config at
// configPath) through kardianos (automatic start, event-log source), sets
// its command line (ServiceArguments) also when it was installed before,
// and then sets the recovery policy, which kardianos can only set to a
// single delay.
func RegisterService(s service.Service, exe, configPath string, w io.Writer) error {
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
	// An older install registered a command line without --service, which
	// makes the agent guess whether it is the service: give it this one.
	if err := setCommandLine(ms, exe, configPath); err != nil {
		return fmt.Errorf("update the service's command line: %w", err)
	}
	warned := false
	for _, c := range []struct {
		call string
		set  func() error
	}{
		{"SetRecoveryActions", func() error {
			return ms.SetRecoveryActions(recoveryActions(), uint32(WindowsRecoveryReset/time.Second))
		}},
		// Also when the agent exits with an error rather than crashing.
		{"SetRecoveryActionsOnNonCrashFailures", func() error { return ms.SetRecoveryActionsOnNonCrashFailures(true) }},
	} {
		err := c.set()
		if err == nil {
			continue
		}
		warning, err := RecoveryFailure(c.call, err, errors.Is(err, windows.ERROR_INVALID_LEVEL) && UnderWine())
		if err != nil {
			return err
		}
		fmt.Fprintln(w, warning)
		warned = true
	}
	if !warned {
		fmt.Fprintln(w, "recovery: restart after 5 s, 30 s, then every 60 s; counts reset after a day without failure")
	}
	return nil
}

// setCommandLine sets the registered command line of ms to exe with
// ServiceArguments(configPath). Only the binary path changes
// (ChangeServiceConfig with SERVICE_NO_CHANGE elsewhere): mgr's
// UpdateConfig would first read the config at a level Wine lacks.
func setCommandLine(ms *mgr.Service, exe, configPath string) error {
	line := syscall.EscapeArg(exe)
	for _, a := range ServiceArguments(configPath) {
		line += " " + syscall.EscapeArg(a)
	}
	return windows.ChangeServiceConfig(ms.Handle, windows.SERVICE_NO_CHANGE, windows.SERVICE_NO_CHANGE,
		windows.SERVICE_NO_CHANGE, windows.StringToUTF16Ptr(line), nil, nil, nil, nil, nil, nil)
}

// UnderWine reports that this process runs under Wine (ntdll exports
// wine_get_version there), whose service manager lacks some calls.
func UnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
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
// It answers the SCM itself (svc.Run) rather than through kardianos, whose
// Run guesses from svc.IsWindowsService and, guessing wrong, runs a console
// agent the SCM gives up on (error 1053).
func RunUnderServiceManager(configPath string, run func(ctx context.Context) error) error {
	p := &winProgram{configPath: configPath, run: run}
	if l, err := eventlog.Open(ServiceName); err == nil {
		p.elog = l
		defer l.Close()
	}
	h := &scmHandler{p: p}
	err := svc.Run(ServiceName, h)
	if errors.Is(err, windows.ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) {
		return errors.New("--service: the Windows service manager did not start this process; --service is the service's own command line (printgate install registers it), and printgate run without it runs the agent by hand")
	}
	if err != nil {
		p.event(EventFailed, "printgate service: "+err.Error())
		return fmt.Errorf("answer the service manager: %w", err)
	}
	return h.err
}

// scmHandler is the service control handler: it starts the agent, reports
// RUNNING, and on Stop or Shutdown stops it and reports STOPPED.
type scmHandler struct {
	p   *winProgram
	err error // why the agent could not start or stop
}

// Execute is svc.Handler's: the service's life between START and STOPPED.
func (h *scmHandler) Execute(_ []string, r <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending}
	if err := h.p.Start(nil); err != nil {
		h.err = err
		return true, 1
	}
	changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for c := range r {
		switch c.Cmd {
		case svc.Interrogate:
			changes <- c.CurrentStatus
		case svc.Stop, svc.Shutdown:
			if c.Cmd == svc.Shutdown {
				h.p.event(EventStopped, "printgate stopping: Windows is shutting down")
			}
			changes <- svc.Status{State: svc.StopPending, WaitHint: uint32((stopWait + 5*time.Second) / time.Millisecond)}
			if err := h.p.Stop(nil); err != nil {
				h.err = err
				return true, 2
			}
			return false, 0
		}
	}
	return false, 0
}

// controlWait bounds how long start and restart wait for the service to
// report RUNNING, beyond which they say so rather than wait on.
const controlWait = 60 * time.Second

// stopLimit bounds how long stop, restart and uninstall wait for STOPPED:
// as long as the agent may take to finish its jobs (stopWait) and a margin.
// A variable so that a test can wait less for a service that never stops.
var stopLimit = stopWait + 10*time.Second

// controlService starts, stops or restarts the installed service through
// the SCM and says what it did. Unlike kardianos's Control, stop and
// restart of a stopped service are not errors, waiting for a service that
// never stops is bounded, and start waits until the agent runs.
func controlService(_ service.Service, action string) (string, error) {
	m, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return "", fmt.Errorf("connect to the service manager: %w%s", err, AdminHintFor(err))
	}
	defer windows.CloseServiceHandle(m)
	h, err := windows.OpenService(m, windows.StringToUTF16Ptr(ServiceName),
		windows.SERVICE_QUERY_STATUS|windows.SERVICE_START|windows.SERVICE_STOP)
	if err != nil {
		if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
			return "", errors.New("the printgate service is not installed (printgate install)")
		}
		return "", fmt.Errorf("open the service: %w%s", err, AdminHintFor(err))
	}
	s := &mgr.Service{Name: ServiceName, Handle: h}
	defer s.Close()
	st, err := s.Query()
	if err != nil {
		return "", fmt.Errorf("ask the service's state: %w%s", err, AdminHintFor(err))
	}
	switch action {
	case "stop":
		if st.State == svc.Stopped {
			return "already stopped", nil
		}
		return "stopped", stopService(s, st)
	case "start":
		if st.State == svc.Running {
			return "already running", nil
		}
		return "started", startService(s)
	case "restart":
		if st.State == svc.Stopped {
			return "started (it was stopped)", startService(s)
		}
		if err := stopService(s, st); err != nil {
			return "", err
		}
		return "restarted", startService(s)
	}
	return "", fmt.Errorf("unknown service action %q", action)
}

// stopService asks s to stop (unless it is stopping already) and waits,
// at most as long as the agent may take to finish its jobs, for STOPPED.
func stopService(s *mgr.Service, st svc.Status) error {
	if st.State != svc.StopPending {
		var err error
		st, err = s.Control(svc.Stop)
		if err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
			return fmt.Errorf("stop the service: %w%s", err, AdminHintFor(err))
		}
	}
	limit := stopLimit
	if err := waitState(s, svc.Stopped, limit); err != nil {
		return fmt.Errorf("the service did not stop within %v (%w): it may still be finishing a job; printgate status shows its state", limit, err)
	}
	return nil
}

// startService starts s and waits for RUNNING: a service that stops again
// at once (a config the agent refuses, a busy port) is reported here.
func startService(s *mgr.Service) error {
	if err := s.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return fmt.Errorf("start the service: %w%s", err, AdminHintFor(err))
	}
	if err := waitState(s, svc.Running, controlWait); err != nil {
		return fmt.Errorf("the service did not start (%w): the agent's log (printgate logs, or the file in its data dir) and the Windows event log (source printgate) say why", err)
	}
	return nil
}

// waitState polls s until it is in want, for at most limit. A service that
// ends up STOPPED while RUNNING is wanted has failed to start.
func waitState(s *mgr.Service, want svc.State, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		st, err := s.Query()
		if err != nil {
			return err
		}
		if st.State == want {
			return nil
		}
		if want == svc.Running && st.State == svc.Stopped {
			return fmt.Errorf("it stopped with exit code %d", st.Win32ExitCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still in state %d after %v", st.State, limit)
		}
		// The SCM has no change notification worth its complexity here.
		time.Sleep(100 * time.Millisecond)
	}
}
