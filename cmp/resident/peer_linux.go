package resident

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeer refuses a connection whose other end is another user's process
// (SO_PEERCRED): the server refuses such a client, and the client such a
// server. The socket's directory already keeps them out; this holds if it
// did not.
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("reading the peer of a connection: %w", err)
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("reading the peer of a connection: %w", err)
	}
	if credErr != nil {
		return fmt.Errorf("reading the peer of a connection: %w", credErr)
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("the other end of the connection is uid %d (pid %d), not the current user's %d: %w", cred.Uid, cred.Pid, os.Geteuid(), ErrPeer)
	}
	return nil
}
