package fileowner

import "os/user"

// Like does nothing on Windows: a file written into the data dir inherits
// the folder's ACL, which the installer gives the service's account.
func Like(path, ref string) error { return nil }

// Of is not known on Windows, where ACLs and not owners decide.
func Of(path string) (Account, error) { return Account{}, nil }

// Current is the account this process runs as (the service: LocalSystem,
// unless told otherwise).
func Current() Account {
	if u, err := user.Current(); err == nil {
		return Account{User: u.Username, Group: u.Username}
	}
	return Account{User: "SYSTEM", Group: "SYSTEM"}
}

// Named is an account by number, which Windows does not have.
func Named(uid, gid int) Account { return Account{UID: uid, GID: gid} }

// ChownFix is how to give acc path on Windows: the data dir's ACL.
func ChownFix(path string, acc Account) string {
	return "give the account the service runs as (" + acc.User + ") read access to " + path + " (icacls \"" + path + "\" /grant " + acc.User + ":R)"
}
