//go:build !linux

package resident

import "net"

// checkPeer relies on the socket's directory elsewhere than on Linux.
func checkPeer(*net.UnixConn) error { return nil }
