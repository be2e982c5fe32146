// Package console is what printgate's commands need of the terminal: to
// tell a console from a pipe or a file, and to read a secret without
// echoing it.
package console

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

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

// PINInput is where ReadPIN reads a new manager PIN from.
type PINInput struct {
	// FromStdin reads one line of Stdin (--pin-stdin), for scripts.
	FromStdin bool
	Stdin     io.Reader
	// Terminal says the PIN can be asked for, twice, with ReadSecret.
	Terminal   bool
	ReadSecret func(prompt string) (string, error)
	// Check refuses a PIN the page would not take, before it is asked
	// for again.
	Check func(pin string) error
}

// ErrNoTerminal is ReadPIN's answer when the PIN can be neither read from
// standard input nor asked for: a usage error.
var ErrNoTerminal = errors.New("standard input is not a terminal, so the PIN cannot be asked for; pass --pin-stdin to read it from standard input")

// ReadPIN reads a new manager PIN from in: one line of standard input, or
// asked twice on the terminal, and checked. Its errors say what went
// wrong and that nothing was changed.
func ReadPIN(in PINInput) (string, error) {
	switch {
	case in.FromStdin:
		line, err := bufio.NewReader(in.Stdin).ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && line != "") {
			return "", fmt.Errorf("--pin-stdin: no PIN on standard input (%v)", err)
		}
		pin := strings.TrimRight(line, "\r\n")
		if err := in.Check(pin); err != nil {
			return "", fmt.Errorf("%v; nothing was changed", err)
		}
		return pin, nil
	case in.Terminal:
		first, err := in.ReadSecret("New manager PIN: ")
		if err != nil {
			return "", fmt.Errorf("reading the PIN: %v", err)
		}
		// Say what is wrong before asking for it again.
		if err := in.Check(first); err != nil {
			return "", fmt.Errorf("%v; nothing was changed", err)
		}
		second, err := in.ReadSecret("The same PIN again: ")
		if err != nil {
			return "", fmt.Errorf("reading the PIN: %v", err)
		}
		if first != second {
			return "", errors.New("the two PINs differ; nothing was changed: run printgate pin set again")
		}
		return first, nil
	}
	return "", ErrNoTerminal
}
