package installer

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// TestAdminHintOnlyOnDenial ensures "(run it from an Administrator command
// prompt)" is added to an access denial only: an error an Administrator
// gets too (Wine's "Invalid level.", a service that does not exist) must
// not send the reader off to a prompt that does not help.
func TestAdminHintOnlyOnDenial(t *testing.T) {
	if h := AdminHintFor(fmt.Errorf("open the service: %w", windows.ERROR_ACCESS_DENIED)); h != AdminHint() {
		t.Errorf("access denied: hint %q, want %q", h, AdminHint())
	}
	for _, err := range []error{windows.ERROR_INVALID_LEVEL, windows.ERROR_SERVICE_DOES_NOT_EXIST, windows.ERROR_SERVICE_REQUEST_TIMEOUT} {
		if h := AdminHintFor(err); h != "" {
			t.Errorf("%v: hint %q, want none", err, h)
		}
	}
}

// TestSetCommandLine ensures installing over an older install, whose
// registered command line was plain `run` (the agent then guessed whether
// it was the service), gives the service the --service command line. It
// registers a throwaway service, so it needs the rights to: an
// Administrator, or Wine.
func TestSetCommandLine(t *testing.T) {
	m, err := mgr.Connect()
	if err != nil {
		t.Skipf("no service manager to register a test service with: %v", err)
	}
	defer m.Disconnect()
	const name = "printgate-cmdline-test"
	exe := `C:\Program Files\printgate\printgate.exe`
	s, err := m.CreateService(name, exe, mgr.Config{StartType: mgr.StartManual}, "run", "--config", `C:\old place\printgate.toml`)
	if err != nil {
		t.Skipf("cannot register a test service (not an Administrator?): %v", err)
	}
	defer func() {
		s.Delete()
		s.Close()
	}()
	if err := setCommandLine(s, exe, `C:\ProgramData\printgate\printgate.toml`); err != nil {
		t.Fatal(err)
	}
	got := binaryPath(t, s)
	want := `"C:\Program Files\printgate\printgate.exe" run --service --config C:\ProgramData\printgate\printgate.toml`
	if got != want {
		t.Fatalf("command line %q, want %q", got, want)
	}
}

// binaryPath reads the service's command line with QueryServiceConfig
// (mgr's Config also asks for levels Wine lacks).
func binaryPath(t *testing.T, s *mgr.Service) string {
	t.Helper()
	var need uint32
	windows.QueryServiceConfig(s.Handle, nil, 0, &need)
	buf := make([]byte, need)
	c := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(s.Handle, c, need, &need); err != nil {
		t.Fatal(err)
	}
	return windows.UTF16PtrToString(c.BinaryPathName)
}

// TestStopBounded ensures stop (and with it restart and uninstall) gives up
// on a service that never reaches STOPPED, saying so, instead of waiting
// forever as kardianos's stop loop did. The service is this test binary
// run as TestStubbornServiceHelper, which stays STOP_PENDING for a while.
// It registers a throwaway service, so it needs the rights to: an
// Administrator, or Wine.
func TestStopBounded(t *testing.T) {
	m, err := mgr.Connect()
	if err != nil {
		t.Skipf("no service manager to register a test service with: %v", err)
	}
	defer m.Disconnect()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const name = "printgate-stubborn-test"
	s, err := m.CreateService(name, exe, mgr.Config{StartType: mgr.StartManual}, "-test.run=^TestStubbornServiceHelper$", "stubborn-service")
	if err != nil {
		t.Skipf("cannot register a test service (not an Administrator?): %v", err)
	}
	defer func() {
		waitState(s, svc.Stopped, 30*time.Second)
		s.Delete()
		s.Close()
	}()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitState(s, svc.Running, 30*time.Second); err != nil {
		t.Fatalf("the helper service did not start: %v", err)
	}
	defer func(l time.Duration) { stopLimit = l }(stopLimit)
	stopLimit = 2 * time.Second
	st, err := s.Query()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = stopService(s, st)
	if err == nil || !strings.Contains(err.Error(), "did not stop within") {
		t.Fatalf("stop of a service that never stops: %v, want it to give up saying so", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("stop gave up after %v, want about %v", took, stopLimit)
	}
}

// TestStubbornServiceHelper is TestStopBounded's service: it answers
// Stop with STOP_PENDING and only stops 8 s later.
func TestStubbornServiceHelper(t *testing.T) {
	if flag.Arg(0) != "stubborn-service" {
		t.Skip("TestStopBounded's service: runs only under the service manager")
	}
	if err := svc.Run("printgate-stubborn-test", stubborn{}); err != nil {
		t.Fatal(err)
	}
}

type stubborn struct{}

func (stubborn) Execute(_ []string, r <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop}
	for c := range r {
		switch c.Cmd {
		case svc.Interrogate:
			changes <- c.CurrentStatus
		case svc.Stop:
			changes <- svc.Status{State: svc.StopPending, WaitHint: 60000}
			time.Sleep(8 * time.Second)
			return false, 0
		}
	}
	return false, 0
}
