package drivers

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUSBStandInIO ensures the usblp I/O path (non-blocking open, writes,
// reads with deadlines) works on a stand-in device, and that the status
// ioctls, which the stand-in lacks, report ErrNoStatus instead of a fault.
func TestUSBStandInIO(t *testing.T) {
	master, slave := openPTY(t)
	// The pty slave is raw only after someone sets it so; usblp has no
	// line discipline at all.
	sfd, err := unix.Open(slave, unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tios, _ := unix.IoctlGetTermios(sfd, unix.TCGETS)
	makeRaw(tios, DefaultLineSettings)
	unix.IoctlSetTermios(sfd, unix.TCSETS, tios)
	unix.Close(sfd)

	c, err := Open(context.Background(), "usb://"+slave, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("\x1b@hello\x1dV\x00")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, master, 10); string(got) != "\x1b@hello\x1dV\x00" {
		t.Fatalf("printer got %q", got)
	}
	master.Write([]byte{0x16})
	if got := readN(t, c, 1); got[0] != 0x16 {
		t.Fatalf("read %x", got)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on silent printer: %v, want deadline exceeded", err)
	}
	if c.(OneWayer).OneWay() {
		t.Error("a device that answered is reported one-way")
	}
	if _, err := c.(LPStatusReader).LPStatus(); !errors.Is(err, ErrNoStatus) {
		t.Errorf("LPStatus on stand-in: %v, want ErrNoStatus", err)
	}
	if _, err := c.(DeviceIDReader).DeviceID(); !errors.Is(err, ErrNoStatus) {
		t.Errorf("DeviceID on stand-in: %v, want ErrNoStatus", err)
	}
}

// TestUSBFIFOStandIn ensures a write-only kind of stand-in (a fifo, as a
// printer that takes bytes) carries job bytes through unchanged.
func TestUSBFIFOStandIn(t *testing.T) {
	p := t.TempDir() + "/lp0"
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	// The reading end must exist first or a non-blocking write open fails
	// with ENXIO.
	rfd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(rfd), p)
	defer r.Close()
	c, err := Open(context.Background(), "usb://"+p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	job := bytes.Repeat([]byte("kitchen ticket\n"), 1000)
	errc := make(chan error, 1)
	go func() {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Write(job)
		errc <- err
	}()
	if got := readN(t, r, len(job)); !bytes.Equal(got, job) {
		t.Fatal("fifo got different bytes")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestUSBOneWay ensures the EINVAL usblp gives on reads from a one-way
// interface becomes ErrOneWay once, then sticks without further syscalls,
// and is not retryable. An eventfd stands in: it answers EINVAL to reads
// shorter than 8 bytes.
func TestUSBOneWay(t *testing.T) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Skipf("eventfd: %v", err)
	}
	c := &usbConn{f: os.NewFile(uintptr(efd), "eventfd"), target: "usb:///dev/usb/lp0", path: "/dev/usb/lp0"}
	defer c.Close()
	for i := 0; i < 2; i++ {
		_, err := c.Read(make([]byte, 4))
		var pe *Error
		if !errors.Is(err, ErrOneWay) || !errors.As(err, &pe) || pe.Retryable() {
			t.Fatalf("read %d: %v, want non-retryable ErrOneWay", i, err)
		}
		if !c.OneWay() {
			t.Fatalf("read %d: OneWay() = false", i)
		}
	}
}

// TestUSBOpenErrors ensures the usual usblp open failures say what to do:
// the lp group for permission, the other program for busy, plugging in
// for a missing device.
func TestUSBOpenErrors(t *testing.T) {
	tests := []struct {
		errno syscall.Errno
		want  string
		retry bool
	}{
		{unix.EACCES, "add the service user to the lp group: usermod -aG lp printgate", false},
		{unix.EBUSY, "another program has the printer open", true},
		{unix.ENODEV, "no such device /dev/usb/lp0: is the printer plugged in", true},
		{unix.ENOENT, "no such device /dev/usb/lp0", true},
	}
	for _, tt := range tests {
		err := usbOpenError("usb:///dev/usb/lp0", "/dev/usb/lp0", tt.errno)
		var pe *Error
		if !errors.As(err, &pe) || pe.Retryable() != tt.retry || !errors.Is(err, tt.errno) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v (retry %v), want %q retry %v", tt.errno, err, pe != nil && pe.Retryable(), tt.want, tt.retry)
		}
	}
	// And for real, on a path that does not exist.
	_, err := Open(context.Background(), "usb:///dev/usb/lp-printgate-none", Options{})
	if !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "no such device") {
		t.Errorf("missing device: %v", err)
	}
	if os.Geteuid() != 0 {
		p := t.TempDir() + "/lp0"
		os.WriteFile(p, nil, 0)
		_, err := Open(context.Background(), "usb://"+p, Options{})
		if !strings.Contains(err.Error(), "lp group") {
			t.Errorf("unreadable device: %v", err)
		}
	}
}

// TestUSBOpenByIDNotFound ensures usb://VID:PID with no such printer gives
// a retryable error listing what is attached.
func TestUSBOpenByIDNotFound(t *testing.T) {
	root := fakeSysfs(t, []fakeLP{{name: "lp0", vid: "0519", pid: "0001"}})
	_, err := Open(context.Background(), "usb://04b8:0202", Options{SysfsRoot: root})
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retryable() || !strings.Contains(err.Error(), "lp0 is 0519:0001") || !strings.Contains(err.Error(), "plugged in") {
		t.Fatalf("err = %v", err)
	}
}
