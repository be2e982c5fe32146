//go:build race

package wheel

// raceEnabled skips allocation counts, which the race detector inflates.
const raceEnabled = true
