//go:build !race

package render

// raceMemoryScale is 1 in a normal build (race_on.go).
const raceMemoryScale = 1
