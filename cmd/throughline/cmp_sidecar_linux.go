package main

import "syscall"

// childProcAttr kills a sidecar child when cmp sidecar dies, however it
// dies (SIGKILL included): no orphan keeps a socket or a port.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
