//go:build unix

package fileowner

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// Like gives path the owner and group of ref (a file or a folder) when this
// process runs as root and ref belongs to someone else: what root writes
// into the service's data dir becomes the service's. Otherwise it does
// nothing: an ordinary account cannot give files away, and a file written
// by the owner of ref is already right.
func Like(path, ref string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(ref)
	if err != nil {
		return fmt.Errorf("give %s the owner of %s: %w", path, ref, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || (st.Uid == 0 && st.Gid == 0) {
		return nil
	}
	if err := os.Lchown(path, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("give %s the owner of %s: %w", path, ref, err)
	}
	return nil
}

// Of is the owner and group of path.
func Of(path string) (Account, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Account{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Account{}, fmt.Errorf("%s: no owner information", path)
	}
	return Named(int(st.Uid), int(st.Gid)), nil
}

// Current is the account this process runs as.
func Current() Account { return Named(os.Geteuid(), os.Getegid()) }

// Named is the account of uid and gid with their names, or the numbers
// where a name is not known.
func Named(uid, gid int) Account {
	a := Account{UID: uid, GID: gid, User: strconv.Itoa(uid), Group: strconv.Itoa(gid)}
	if u, err := user.LookupId(a.User); err == nil {
		a.User = u.Username
	}
	if g, err := user.LookupGroupId(a.Group); err == nil {
		a.Group = g.Name
	}
	return a
}

// ChownFix is the command that gives path to acc, as a fix line ends.
func ChownFix(path string, acc Account) string {
	return "sudo chown " + acc.Spec() + " " + path
}
