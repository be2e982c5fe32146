package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"runtime"
	"strconv"

	"printgate/agent/config"
	"printgate/internal/fileowner"
	"printgate/internal/portowner"
)

// StartError is a reason the agent cannot start that a person fixes on
// this PC: a sentence in the config errors' standard ("FILE:LINE: …",
// the line of the key it is about) and the fix, which its message ends
// with on a "fix:" line, as doctor prints it.
type StartError struct {
	// Msg is the sentence: "FILE:LINE: key: what is wrong".
	Msg string
	// Fix is what to do, a command where one does it.
	Fix string
	// Err is the OS error behind it.
	Err error
}

// Error is the sentence and its fix line.
func (e *StartError) Error() string { return e.Msg + "\nfix: " + e.Fix }

// Unwrap is the OS error behind it.
func (e *StartError) Unwrap() error { return e.Err }

// checkDataDir makes the data dir when it is missing and proves it
// writable, before anything opens a file in it: a missing or foreign
// folder is then one sentence with its fix, not the log's or the spool's
// OS error.
func checkDataDir(cfg *config.Config) error {
	dir := cfg.DataDir
	where := keyWhere(cfg, "data_dir", dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &StartError{Msg: fmt.Sprintf("%s %s does not exist and cannot be created: %v", where, dir, pathReason(err)),
			Fix: dataDirFix(cfg, err), Err: err}
	}
	f, err := os.CreateTemp(dir, ".printgate-start-*")
	if err != nil {
		return &StartError{Msg: fmt.Sprintf("%s %s is not writable by %s, the account the agent runs as: %v", where, dir, fileowner.Current().User, pathReason(err)),
			Fix: dataDirFix(cfg, err), Err: err}
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// keyWhere starts a message about a key: "FILE:LINE: key:" where the key
// is written, "FILE: key (default VALUE):" where it is left out.
func keyWhere(cfg *config.Config, key, value string) string {
	if w := cfg.Where(key); w != cfg.Path {
		return w + ": " + key + ":"
	}
	return fmt.Sprintf("%s: %s (default %s):", cfg.Path, key, value)
}

// dataDirFix is the command that gives the agent's account its data dir,
// or, where permissions are not the cause (a read-only disk), where to
// move it.
func dataDirFix(cfg *config.Config, err error) string {
	dir := cfg.DataDir
	if !errors.Is(err, fs.ErrPermission) {
		return fmt.Sprintf("set data_dir in %s to a folder on a writable disk", cfg.Path)
	}
	if runtime.GOOS == "windows" {
		return fmt.Sprintf("give the account the service runs as full control of %s (icacls \"%s\" /grant SYSTEM:F), or run printgate as an administrator", dir, dir)
	}
	return fmt.Sprintf("sudo mkdir -p %s && sudo chown %s %s", dir, fileowner.Current().Spec(), dir)
}

// pathReason drops the path an *fs.PathError repeats.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// listenError says why the listener could not open, who holds the port
// when it is taken, and what to do.
func listenError(cfg *config.Config, err error) error {
	where := keyWhere(cfg, "listen", cfg.Listen)
	_, port, _ := net.SplitHostPort(cfg.Listen)
	next := "127.0.0.1:8632"
	if n, perr := strconv.Atoi(port); perr == nil && n > 0 && n < 65535 {
		next = "127.0.0.1:" + strconv.Itoa(n+1)
	}
	reason := err
	var oe *net.OpError
	if errors.As(err, &oe) {
		reason = oe.Err
	}
	switch {
	case addrInUse(err):
		n, _ := strconv.Atoi(port)
		holder, found := portowner.Listening(n)
		switch {
		case found && holder.Name == "printgate":
			return &StartError{Msg: fmt.Sprintf("%s %s is taken by another printgate agent, %s", where, cfg.Listen, holder),
				Fix: fmt.Sprintf("stop that agent (sudo printgate stop, or Ctrl-C where it runs) and start this one again, or set listen in %s to a free port such as %q", cfg.Path, next), Err: err}
		case found:
			return &StartError{Msg: fmt.Sprintf("%s %s is taken by another program, %s", where, cfg.Listen, holder),
				Fix: fmt.Sprintf("stop %s, or set listen in %s to a free port such as %q", holder, cfg.Path, next), Err: err}
		}
		return &StartError{Msg: fmt.Sprintf("%s %s is taken by another program", where, cfg.Listen),
			Fix: fmt.Sprintf("stop it (%s), or set listen in %s to a free port such as %q", whoListens(port), cfg.Path, next), Err: err}
	case errors.Is(err, fs.ErrPermission):
		return &StartError{Msg: fmt.Sprintf("%s %s cannot be opened by %s: %v", where, cfg.Listen, fileowner.Current().User, reason),
			Fix: fmt.Sprintf("ports below 1024 need privileges; set listen in %s to a port above 1024, such as \"127.0.0.1:8631\"", cfg.Path), Err: err}
	}
	return &StartError{Msg: fmt.Sprintf("%s %s cannot be opened: %v", where, cfg.Listen, reason),
		Fix: fmt.Sprintf("set listen in %s to an address of this PC, such as \"127.0.0.1:%s\" (this PC only) or \":%s\" (the shop network)", cfg.Path, port, port), Err: err}
}

// whoListens is how a person finds the program on a port by hand.
func whoListens(port string) string {
	if runtime.GOOS == "windows" {
		return "netstat -ano | findstr :" + port + " shows its process id"
	}
	return "sudo ss -ltnp 'sport = :" + port + "' shows which"
}
