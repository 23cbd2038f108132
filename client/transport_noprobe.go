//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package client

import "net"

// directSupported is false where alive cannot peek at a socket: the Client
// then uses net/http's Transport, whose reader goroutine notices a
// connection the server closed.
const directSupported = false

func alive(net.Conn) bool { return false }
