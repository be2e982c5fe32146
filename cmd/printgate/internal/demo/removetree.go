package demo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// removeTree removes dir and everything in it with removeAll (os.RemoveAll)
// and, if that fails, entry by entry with os.Remove, deepest first. Go's
// RemoveAll on Windows deletes with a call (POSIX-semantics delete) that
// some file systems and filter drivers, and Wine, answer "Invalid function"
// for, while the plain delete os.Remove uses works there.
func removeTree(dir string, removeAll func(string) error) error {
	err := removeAll(dir)
	if err == nil {
		return nil
	}
	var paths []string
	walkErr := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil && p == dir {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if errors.Is(walkErr, fs.ErrNotExist) {
		return nil
	}
	// Walk order puts a folder before what it holds: reversed, every
	// folder is empty by the time it is removed.
	slices.Reverse(paths)
	for _, p := range paths {
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return errors.Join(err, rerr)
		}
	}
	return nil
}
