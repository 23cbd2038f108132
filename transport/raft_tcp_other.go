//go:build !linux

package transport

import "syscall"

// setTCPUserTimeout does nothing where TCP_USER_TIMEOUT does not exist:
// the keep-alives (tcpKeepAlive) still end a dead connection.
func setTCPUserTimeout(_, _ string, _ syscall.RawConn) error { return nil }
