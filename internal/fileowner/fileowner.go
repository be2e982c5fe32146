// Package fileowner keeps the files an administrator writes for the agent
// readable by the agent. `sudo printgate pin set` runs as root, but the
// service runs as its own account (printgate on Linux): a file root
// writes into the service's data dir is root's, mode 0600, and the agent
// cannot read it. Like hands such a file to the owner of
// the folder it was written for, and ChownFix says how a person does it
// by hand.
package fileowner

// Account is a user and group as a person types them for chown
// ("printgate:printgate"), with their numeric ids.
type Account struct {
	// User and Group are the names, or the numbers where a name is unknown.
	User, Group string
	// UID and GID are the numeric ids (0 on Windows).
	UID, GID int
}

// Spec is the account as chown takes it: "user:group".
func (a Account) Spec() string { return a.User + ":" + a.Group }
