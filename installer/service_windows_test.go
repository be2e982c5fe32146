package installer

import (
	"fmt"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
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
