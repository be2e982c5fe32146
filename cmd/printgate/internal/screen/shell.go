package screen

import (
	"os"
	"runtime"
)

// Shell is the shell a person pastes a fix line or a next step into, so
// the command works there as written: a root shell, where sudo may not be
// installed at all (a fresh Debian, a container), or an account that
// becomes root with sudo.
type Shell struct {
	// GOOS is the machine's system; sudo and runuser are Linux's.
	GOOS string
	// Root is a root shell: root, and not through sudo (a person who ran
	// `sudo printgate …` has sudo and types it again).
	Root bool
}

// ThisShell is the shell the running command was started from.
func ThisShell() Shell {
	return Shell{GOOS: runtime.GOOS, Root: os.Geteuid() == 0 && os.Getenv("SUDO_USER") == ""}
}

// Admin is cmd as it is run with root's rights: as is in a root shell (and
// off Linux), with sudo otherwise.
func (s Shell) Admin(cmd string) string {
	if s.GOOS != "linux" || s.Root {
		return cmd
	}
	return "sudo " + cmd
}

// AsService is cmd run as the service's account, printgate: with runuser
// (util-linux, on every Linux) in a root shell, with sudo otherwise; off
// Linux there is no such account, and cmd is as is.
func (s Shell) AsService(cmd string) string {
	switch {
	case s.GOOS != "linux":
		return cmd
	case s.Root:
		return "runuser -u printgate -- " + cmd
	}
	return "sudo -u printgate " + cmd
}
