//go:build unix

package main

import (
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// foreignOwner returns the name of the user the data dir belongs to when
// this process runs as root and the dir is another user's (the packaged
// hub's is printgate-hub's): files root made there would be root's, and
// the hub, run by its service as that user, could not open them.
func foreignOwner(dir string) (string, bool) {
	if os.Geteuid() != 0 {
		return "", false
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return "", false
	}
	id := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username, true
	}
	return id, true
}
