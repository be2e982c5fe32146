//go:build !windows

package installer

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// copyOwner gives file the owner and group of st, so a config rewritten by
// root stays readable by the service account that owned it.
func copyOwner(st fs.FileInfo, file string) error {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return os.Chown(file, int(s.Uid), int(s.Gid))
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
