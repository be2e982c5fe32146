package installer

import (
	"fmt"
	"time"
)

// RecoveryStep is one Windows service recovery action: restart the service
// after Delay. The SCM uses the first step on the first failure, the second
// on the second, and the last one for every later failure.
type RecoveryStep struct {
	Delay time.Duration
}

// WindowsRecovery is the recovery policy of the Windows service: restart
// after 5 s, then 30 s, then every 60 s, so a crash loop does not spin the
// CPU and a passing fault is over in seconds.
func WindowsRecovery() []RecoveryStep {
	return []RecoveryStep{{Delay: 5 * time.Second}, {Delay: 30 * time.Second}, {Delay: 60 * time.Second}}
}

// WindowsRecoveryReset is how long the service must run without failing
// before the SCM starts again from the first (shortest) step.
const WindowsRecoveryReset = 24 * time.Hour

// Event-log message ids the Windows service writes under the source
// ServiceName, so an administrator can filter them.
const (
	EventStarted = 1
	EventStopped = 2
	EventFailed  = 3
)

// RecoveryFailure decides what a failed recovery call of the Windows
// service manager means for install: an error, or, when the service
// manager does not implement the call (Wine's lacks some config levels),
// a warning naming it, since the service itself is registered and runs.
// On Windows the calls exist, so a failure there stays an error.
func RecoveryFailure(call string, err error, notImplemented bool) (warning string, fatal error) {
	if notImplemented {
		return fmt.Sprintf("warning: recovery actions not set: this service manager does not implement %s (%v); the service runs, but is not restarted by it after a failure", call, err), nil
	}
	return "", fmt.Errorf("set the recovery actions (%s): %w", call, err)
}
