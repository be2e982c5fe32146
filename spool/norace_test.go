//go:build !race

package spool

// raceEnabled: see race_test.go.
const raceEnabled = false
