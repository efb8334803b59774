//go:build linux && cgo

package sandbox

// psxListsTasks: in a cgo build, go-landlock restricts every thread through
// libpsx, which lists /proc/<pid>/task afterwards, so go-landlock adds a
// rule for that directory; the rule cannot be made where /proc is not this
// process's PID namespace's (a PID namespace without its own /proc).
const psxListsTasks = true
