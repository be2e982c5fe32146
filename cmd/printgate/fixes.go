package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/cmd/printgate/internal/screen"
	"printgate/installer"
	"printgate/internal/fileowner"
	"printgate/internal/portowner"
)

// Every failure a person reads ends with a "fix:" line, as doctor's do,
// so nobody is left with an error and no next step; this file holds the fixes the commands share.

// loadConfig loads the config at path for command name; a failure is
// printed as "printgate NAME: …" and its fix line, and yields false.
func loadConfig(name, path string, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		msg, fix := configFailure(name, path, err)
		fmt.Fprintf(stderr, "printgate %s: %s\nfix: %s\n", name, msg, fix)
		return nil, false
	}
	return cfg, true
}

// configFailure is a config that did not load, as a sentence and its fix,
// for command name (what to run again with sudo).
func configFailure(name, path string, err error) (msg, fix string) {
	var errs config.Errors
	switch {
	case errors.Is(err, fs.ErrNotExist) && !errors.As(err, &errs):
		return err.Error(), "run sudo printgate install to write one, or name the config with --config FILE"
	case errors.Is(err, fs.ErrPermission) && !errors.As(err, &errs):
		return unreadable(path, err), readFix(name, path)
	case errors.As(err, &errs):
		fix = "edit the lines named above; each message says what the line needs"
		if strings.Contains(err.Error(), "permission denied") {
			// The config reads a file (the API token) this account cannot.
			fix = "run it with sudo (sudo printgate " + name + "), as the service's account reads them"
		}
		return err.Error(), fix
	}
	return err.Error(), "run sudo printgate doctor, which checks the setup and says what to change"
}

// unreadable is "FILE: alice cannot read the config: permission denied (it
// belongs to printgate:printgate, mode 0600)".
func unreadable(path string, err error) string {
	var pe *fs.PathError
	reason := err
	if errors.As(err, &pe) {
		reason = pe.Err
	}
	msg := fmt.Sprintf("%s: %s cannot read the config: %v", path, fileowner.Current().User, reason)
	if fi, serr := os.Stat(path); serr == nil {
		if owner, oerr := fileowner.Of(path); oerr == nil && owner.User != "" {
			msg += fmt.Sprintf(" (it belongs to %s, mode %04o)", owner.Spec(), uint32(fi.Mode().Perm()))
		}
	}
	return msg
}

// readFix says how to read a config this account cannot: with sudo, or,
// where the file's group may read it, by joining that group.
func readFix(name, path string) string {
	fix := "run it with sudo: sudo printgate " + name
	fi, err := os.Stat(path)
	if err != nil {
		return fix
	}
	if owner, err := fileowner.Of(path); err == nil && fi.Mode().Perm()&0o040 != 0 && owner.GID != 0 {
		fix += fmt.Sprintf(", or join the %s group that may read it (sudo usermod -aG %s %s, then log in again)", owner.Group, owner.Group, fileowner.Current().User)
	}
	return fix
}

// tokenRefused is a 401 from the agent, said as what it means for a
// command on this PC: the token this command read is not the running
// agent's, where each lives, and the fix.
func tokenRefused(cfg *config.Config, err error) (msg, fix string, ok bool) {
	var ae *apiclient.Error
	if !errors.As(err, &ae) || ae.Status != 401 {
		return "", "", false
	}
	read := "the api_token in " + cfg.Where("api_token")
	if cfg.APITokenFile != "" {
		read = cfg.APITokenFile + " (api_token_file at " + cfg.Where("api_token_file") + ")"
	}
	msg = fmt.Sprintf("the agent at %s refused the API token this command read from %s: it is not the token the running agent read from its own config when it started", apiclient.URL(cfg), read)
	fix = fmt.Sprintf("if the token changed since the agent started, restart it ("+screen.ThisShell().Admin("printgate restart")+", or stop and start printgate run); if the agent runs with another config, name that one with --config (the service's is %s)", config.DefaultConfigPath())
	return msg, fix, true
}

// agentDownFix is how to start the agent of cfg: the service where a
// service manager runs, else in the foreground.
func agentDownFix(cfg *config.Config) string {
	if installer.NoServiceManager() != "" {
		return "start the agent: " + foregroundCommand(cfg.Path) + " (no service manager runs here)"
	}
	return "start the agent: " + screen.ThisShell().Admin("printgate start") + " (the service), or printgate run --config " + cfg.Path
}

// agentSilentFix is what to do when something holds the agent's port of
// cfg and does not answer: name it where /proc can, and say how to find it
// where not.
func agentSilentFix(cfg *config.Config) string {
	_, port, err := net.SplitHostPort(cfg.Listen)
	n, _ := strconv.Atoi(port)
	if err != nil || n <= 0 {
		return "check which program holds the agent's listen address (" + cfg.Listen + ")"
	}
	holder, found := portowner.Listening(n)
	switch {
	case found && holder.Name == "printgate":
		return fmt.Sprintf("the agent, %s, holds port %d but does not answer: restart it (%s, or Ctrl-C and printgate run where it runs), and send its log to support if it happens again", holder, n, screen.ThisShell().Admin("printgate restart"))
	case found:
		return fmt.Sprintf("%s holds port %d, the agent's listen port: stop it, or set listen in %s to a free port and restart the agent", holder, n, cfg.Path)
	}
	find := "sudo ss -ltnp 'sport = :" + port + "' shows which"
	if runtime.GOOS == "windows" {
		find = "netstat -ano | findstr :" + port + " shows its process id"
	}
	return fmt.Sprintf("find the program on port %d (%s): stop it if it is not printgate, or restart printgate if it is", n, find)
}

// apiFailed prints a failed request of command name to the agent of cfg,
// after prefix (a task number, or ""), with the fix line where the cause is
// known: a refused token, or no agent running.
func apiFailed(stderr io.Writer, name, prefix string, cfg *config.Config, err error) {
	if prefix != "" {
		prefix += ": "
	}
	msg, fix := err.Error(), ""
	if m, f, ok := tokenRefused(cfg, err); ok {
		msg, fix = m, f
	} else if errors.Is(err, apiclient.ErrAgentDown) {
		fix = agentDownFix(cfg)
	} else if errors.Is(err, apiclient.ErrAgentSilent) {
		fix = agentSilentFix(cfg)
	}
	fmt.Fprintf(stderr, "printgate %s: %s%s\n", name, prefix, msg)
	if fix != "" {
		fmt.Fprintf(stderr, "fix: %s\n", fix)
	}
}
