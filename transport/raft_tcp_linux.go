package transport

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setTCPUserTimeout makes the kernel end a TCP message stream whose data
// has gone unacknowledged for unansweredAfter, as the QUIC path's answer
// watch does (peer.go): without it a write into a connection whose peer
// lost it would wait for TCP's retransmissions, minutes.
func setTCPUserTimeout(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(unansweredAfter.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
