//go:build race

package render

// raceMemoryScale multiplies the render child's memory budget in a binary
// built with the race detector, whose shadow memory counts in RLIMIT_DATA
// (Go documents 5-10x the memory of a normal build).
const raceMemoryScale = 8

// raceEnv is added to the child's environment in a race-detector build:
// the detector sleeps a second at every exit by default (atexit_sleep_ms),
// which made every render of the race-built tests a second slower; a race
// found in the child still fails it (halt_on_error).
var raceEnv = []string{"GORACE=atexit_sleep_ms=0 halt_on_error=1"}

// raceTimeScale multiplies the render child's default time budget in a
// binary built with the race detector, which runs Go code 2-20x slower
// (Go's race detector documentation): the tests' renders keep the default
// budget's margin.
const raceTimeScale = 4
