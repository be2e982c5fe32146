//go:build unix

package doctor

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"printgate/agent/config"
	"printgate/drivers"
	"printgate/internal/fileowner"
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

// CheckServiceFiles is check 2c: the account the service runs as can read
// every file it needs and write its data dir, whoever wrote them
// (`sudo printgate pin set` once wrote the PIN as root, mode 0600, and
// every login failed while doctor said all was well). The account is
// env.ServiceUser when it exists, else the data dir's owner.
func CheckServiceFiles(env Env, cfg *config.Config) []Result {
	acc, groups, who, ok := serviceAccount(env, cfg)
	if !ok {
		return []Result{{Name: "service files", Status: Skip, Detail: "no " + env.ServiceUser + " account and no data dir yet: nothing to compare with"}}
	}
	if acc.UID == 0 {
		return []Result{{Name: "service files", Detail: "the service runs as root (" + who + "), which reads every file"}}
	}
	var out []Result
	checked := 0
	for _, f := range serviceFiles(cfg) {
		fi, err := os.Stat(f.path)
		if err != nil {
			continue
		}
		checked++
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		need := uint32(0o4)
		if f.dir {
			need = 0o7
		}
		if canAccess(fi.Mode().Perm(), st, acc, groups, need) {
			continue
		}
		owner := fileowner.Named(int(st.Uid), int(st.Gid))
		r := Result{Name: "service files", Status: Fail}
		verb := "read"
		if f.dir {
			verb = "write"
		}
		r.Detail = fmt.Sprintf("%s: %s (%s) cannot %s %s: it belongs to %s, mode %s", f.path, acc.User, who, verb, f.what, owner.Spec(), modeText(fi.Mode().Perm()))
		switch {
		case int(st.Uid) != acc.UID:
			r.Fix = fileowner.ChownFix(f.path, acc)
		case f.dir:
			r.Fix = "sudo chmod 700 " + f.path
		default:
			r.Fix = "sudo chmod 600 " + f.path
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		out = append(out, Result{Name: "service files", Detail: fmt.Sprintf("%s (%s) can read the %d file(s) it needs and write the data dir", acc.User, who, checked)})
	}
	return out
}

// serviceAccount is the account the service runs as, its groups, and how
// that is known.
func serviceAccount(env Env, cfg *config.Config) (fileowner.Account, []int, string, bool) {
	if u, err := user.Lookup(env.ServiceUser); err == nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		var groups []int
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if n, err := strconv.Atoi(id); err == nil {
					groups = append(groups, n)
				}
			}
		}
		return fileowner.Named(uid, gid), append(groups, gid), "the service's account", true
	}
	if acc, err := fileowner.Of(cfg.DataDir); err == nil {
		return acc, []int{acc.GID}, "the data dir's owner", true
	}
	return fileowner.Account{}, nil, "", false
}

// canAccess reports whether acc, in groups, has the need bits (4 read,
// 7 read, write and enter) on a file of mode perm and owner st.
func canAccess(perm fs.FileMode, st *syscall.Stat_t, acc fileowner.Account, groups []int, need uint32) bool {
	p := uint32(perm)
	switch {
	case int(st.Uid) == acc.UID:
		return p>>6&need == need
	case slices.Contains(groups, int(st.Gid)):
		return p>>3&need == need
	}
	return p&need == need
}

// modeText is a mode as chmod takes it ("0600").
func modeText(m fs.FileMode) string { return fmt.Sprintf("%04o", uint32(m.Perm())) }
