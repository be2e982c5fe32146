//go:build unix

package doctor

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"printgate/drivers"
)

// errAddrNotAvail and errPermission classify a failed listen.
var (
	errAddrNotAvail error = syscall.EADDRNOTAVAIL
	errPermission   error = syscall.EACCES
)

// timeSyncFix is the fix for a clock that drifted.
const timeSyncFix = "enable time sync: sudo timedatectl set-ntp true (then timedatectl should say \"System clock synchronized: yes\")"

// diskFreeAt reports the bytes available to this process on dir's file
// system, as the spool measures it.
func diskFreeAt(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// dataDirFix says how to give the service the data dir.
func dataDirFix(dir string) string {
	return fmt.Sprintf("give the agent's account the folder: sudo mkdir -p %s && sudo chown -R printgate: %s (or the account you run printgate as)", dir, dir)
}

// whoListensHint says how to find the program on a port.
func whoListensHint(port string) string {
	return "sudo ss -ltnp 'sport = :" + port + "' shows it"
}

// devicePermission checks that the current user can read and write the
// device at path, and names the group to join when not.
func devicePermission(path string, scheme drivers.Scheme) Result {
	var r Result
	fi, err := os.Stat(path)
	if err != nil {
		r.Status = Fail
		r.Detail = fmt.Sprintf("%s: %v", path, unwrapPath(err))
		r.Fix = "plug the printer in and switch it on, or correct the device in its url; printgate printers lists the serial ports and USB printers this PC sees"
		return r
	}
	who := "this account"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if err := unix.Access(path, unix.R_OK|unix.W_OK); err == nil {
		r.Detail = fmt.Sprintf("%s: %s can read and write it", path, who)
		return r
	}
	group, gid := "", -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		gid = int(st.Gid)
		if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
			group = g.Name
		} else {
			group = strconv.Itoa(gid)
		}
	}
	r.Status = Fail
	r.Detail = fmt.Sprintf("%s: %s cannot read and write it (mode %s, group %s)", path, who, fi.Mode().Perm(), orDash(group))
	want := "dialout"
	if scheme == drivers.SchemeUSB {
		want = "lp"
	}
	switch {
	case gid == 0 || group == "":
		r.Fix = fmt.Sprintf("the device belongs to root only: add a udev rule giving it to the %s group with mode 0660, then sudo usermod -aG %s printgate and restart the service", want, want)
	case fi.Mode().Perm()&0o060 != 0o060:
		r.Fix = fmt.Sprintf("the %s group cannot read and write it either: sudo chmod g+rw %s (a udev rule makes it stick), then sudo usermod -aG %s printgate", group, path, group)
	default:
		r.Fix = fmt.Sprintf("sudo usermod -aG %s printgate (the service's account; for yourself: sudo usermod -aG %s %s and log in again), then restart the service", group, group, who)
	}
	return r
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
