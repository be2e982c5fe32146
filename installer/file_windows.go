package installer

import "io/fs"

// copyOwner is a no-op on Windows: the new file inherits the folder's ACL,
// which the installer sets.
func copyOwner(fs.FileInfo, string) error { return nil }

// syncDir is a no-op on Windows, where NTFS journals renames and a folder
// cannot be opened for syncing.
func syncDir(string) error { return nil }
