//go:build !unix

package main

// foreignOwner is the Unix check that root does not write into another
// user's data dir; elsewhere there is nothing to check.
func foreignOwner(string) (string, bool) { return "", false }
