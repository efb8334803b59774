//go:build race

package render

// raceMemoryScale multiplies the render child's memory budget in a binary
// built with the race detector, whose shadow memory counts in RLIMIT_DATA
// (Go documents 5-10x the memory of a normal build).
const raceMemoryScale = 8
