package installer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// PrepareHost makes the printgate system user and its groups (the
// commands of AccountCommands), and says on w what it created.
func PrepareHost(w io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("installing the service needs root: run sudo printgate install")
	}
	look := AccountLookup{
		UserExists:  func(n string) bool { _, err := user.Lookup(n); return err == nil },
		GroupExists: func(n string) bool { _, err := user.LookupGroup(n); return err == nil },
	}
	for _, c := range AccountCommands(look) {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(c, " "), err, strings.TrimSpace(string(out)))
		}
		if c[0] != "usermod" {
			fmt.Fprintf(w, "created: %s\n", strings.Join(c, " "))
		}
	}
	return nil
}

// PrepareDirs gives the service account its folders: the config folder
// (root:printgate 0770, so the agent can replace its config when the page
// adds a printer), the config and token files (printgate, 0600) and the
// data dir (printgate, 0700), which must exist before the first start for
// `sudo -u printgate printgate pair` to save the device token in it.
func PrepareDirs(d ServiceDirs) error {
	u, err := user.Lookup(ServiceUser)
	if err != nil {
		return fmt.Errorf("find the %s user: %w", ServiceUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir := filepath.Dir(d.Config)
	if err := chownMode(dir, 0, gid, 0o770); err != nil {
		return err
	}
	files := []string{d.Config}
	if d.TokenFile != "" {
		files = append(files, d.TokenFile)
	}
	for _, f := range files {
		if err := chownMode(f, uid, gid, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	data := LinuxDataDir
	if d.DataDir != "" {
		data = d.DataDir
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("create the data dir: %w", err)
	}
	return chownMode(data, uid, gid, 0o700)
}

func chownMode(path string, uid, gid int, mode fs.FileMode) error {
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("give %s to the service account: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	return nil
}
