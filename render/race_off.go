//go:build !race

package render

// raceMemoryScale is 1 in a normal build (race_on.go).
const raceMemoryScale = 1

// raceEnv is empty in a normal build (race_on.go).
var raceEnv = []string(nil)

// raceTimeScale is 1 in a normal build (race_on.go).
const raceTimeScale = 1
