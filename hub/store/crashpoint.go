//go:build !hubcrash

package store

// crashPoint marks a place where a crash test stops the hub (see
// crashpoint_hubcrash.go); in every other build it does nothing.
func crashPoint(string) {}
