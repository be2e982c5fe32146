//go:build race

package spool

// raceEnabled skips the largest caps, which the race detector makes take
// minutes to fill.
const raceEnabled = true
