//go:build linux || darwin || freebsd || netbsd || openbsd

package client

import (
	"errors"
	"net"
	"syscall"
)

// directSupported: alive can tell a closed pooled connection from an open one here.
const directSupported = true

// alive reports whether the idle connection c is still open with nothing
// to read: a peek that would block. The server closing an idle connection
// (its idle timeout, a restart, a failover) shows as end-of-file, so the
// next request dials anew instead of failing on a dead connection, which
// net/http learns from the reader goroutine it keeps on every connection.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var (
		buf  [1]byte
		perr error
	)
	err = rc.Read(func(fd uintptr) bool {
		_, _, perr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait
	})
	if err != nil {
		return false
	}
	// Only "would block" means open and quiet. Data on an idle HTTP/1.1
	// connection answers nothing (a TLS alert, a stray byte), so such a
	// connection is not safe to use either.
	return errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK)
}
