package installer

import "strings"

// AccountLookup answers whether a user or group exists; the real one reads
// the system's databases (os/user), tests give a fixed answer.
type AccountLookup struct {
	UserExists  func(name string) bool
	GroupExists func(name string) bool
}

// AccountCommands returns the commands, in order, that make the service
// account as the unit expects it: the device groups when a minimal system
// lacks them, the printgate system user with its own group, no home and no
// shell, and its membership of the device groups (again with usermod, so
// an account made by an older install gains a group added since). Each
// command is an argument list for exec, never a shell line. The .deb's
// postinst runs the same commands.
func AccountCommands(look AccountLookup) [][]string {
	var cmds [][]string
	for _, g := range SupplementaryGroups {
		if !look.GroupExists(g) {
			cmds = append(cmds, []string{"groupadd", "--system", g})
		}
	}
	groups := strings.Join(SupplementaryGroups, ",")
	if !look.UserExists(ServiceUser) {
		cmds = append(cmds, []string{"useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", LinuxDataDir, "--shell", "/usr/sbin/nologin",
			"--comment", DisplayName, "--groups", groups, ServiceUser})
		return cmds
	}
	return append(cmds, []string{"usermod", "--append", "--groups", groups, ServiceUser})
}
