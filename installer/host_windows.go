package installer

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// PrepareHost has nothing to do on Windows: the service runs as
// LocalSystem, which reaches every printer.
func PrepareHost(io.Writer) error { return nil }

// serviceDirSDDL lets only SYSTEM (the service) and Administrators into the
// service's folder, which holds the config with the API token and the
// spool with the tickets; by default any local user could read
// %ProgramData%. Protected (P) so the folder no longer inherits that.
const serviceDirSDDL = "D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// PrepareDirs locks the service's %ProgramData% folder down when the
// config is there.
func PrepareDirs(d ServiceDirs) error {
	dir := filepath.Dir(d.Config)
	if !strings.EqualFold(dir, WindowsDataDir(os.Getenv("ProgramData"))) {
		return nil
	}
	sd, err := windows.SecurityDescriptorFromString(serviceDirSDDL)
	if err != nil {
		return fmt.Errorf("security descriptor: %w", err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("security descriptor: %w", err)
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return fmt.Errorf("restrict %s to SYSTEM and Administrators: %w", dir, err)
	}
	return nil
}
