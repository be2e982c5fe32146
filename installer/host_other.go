//go:build !linux && !windows

package installer

import "io"

// PrepareHost has nothing to do where printgate does not ship a service
// account (a developer's Mac).
func PrepareHost(io.Writer) error { return nil }

// PrepareDirs leaves the folders as they are where printgate does not
// ship a sandbox.
func PrepareDirs(ServiceDirs) error { return nil }
