//go:build linux

package printertest

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenPTY connects the printer to a new pseudo-terminal and returns the
// path of its slave side (/dev/pts/N), which a host opens like a serial
// port. The line is raw (no echo, no CR/LF translation). The printer keeps
// the slave open itself so the line survives the host closing and
// reopening it.
func (p *Printer) OpenPTY() (string, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return "", fmt.Errorf("printertest: open pty master: %w", err)
	}
	var n uint32
	if err := control(m, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		var err error
		n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN)
		return err
	}); err != nil {
		m.Close()
		return "", fmt.Errorf("printertest: pty: %w", err)
	}
	path := fmt.Sprintf("/dev/pts/%d", n)
	s, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return "", fmt.Errorf("printertest: open pty slave: %w", err)
	}
	if err := control(s, makeRaw); err != nil {
		m.Close()
		s.Close()
		return "", fmt.Errorf("printertest: pty raw mode: %w", err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		m.Close()
		s.Close()
		return "", errors.New("printertest: printer closed")
	}
	p.closers = append(p.closers, m, s)
	p.mu.Unlock()
	p.addConn(m, m.SetWriteDeadline, true)
	return path, nil
}

// control runs fn on f's descriptor without putting f in blocking mode (as
// f.Fd would), so deadlines keep working.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// makeRaw is cfmakeraw(3).
func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}
