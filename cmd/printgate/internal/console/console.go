// Package console is what printgate's commands need of the terminal: to
// tell a console from a pipe or a file, and to read a secret without
// echoing it.
package console

import (
	"fmt"
	"io"
	"os"
	"os/signal"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal (a console on Windows): a
// character device that is not the null device. It is deliberately simple
// and portable; it also counts other character devices (a printer's
// /dev/usb/lp0) as terminals, for which `-o DEVICE` is the way to write.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

// ReadSecret prompts on w and reads a line from the terminal fd
// with echo off. Ctrl-C while it waits puts the terminal back as it was
// before the process ends, so the shell does not stay without echo.
func ReadSecret(fd int, prompt string, w io.Writer) (string, error) {
	state, err := term.GetState(fd)
	if err != nil {
		return "", fmt.Errorf("terminal state: %w", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	defer func() {
		signal.Stop(sig)
		close(done)
	}()
	go func() {
		select {
		case <-sig:
			_ = term.Restore(fd, state)
			fmt.Fprintln(w, "\nprintgate pin set: stopped; nothing was changed")
			os.Exit(130)
		case <-done:
		}
	}()
	fmt.Fprint(w, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(w)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
