//go:build linux && !cgo

package sandbox

// psxListsTasks is false without cgo: libpsx is not linked (cgo_on.go).
const psxListsTasks = false
