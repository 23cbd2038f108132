//go:build !linux

package transport

import (
	"errors"
	"net"
)

// errNoUDPTable: only Linux publishes per-socket drop counts this way.
var errNoUDPTable = errors.New("UDP socket statistics are only read on Linux")

// ReadUDPSocket is Linux-only (udpstats_linux.go).
func ReadUDPSocket(*net.UDPConn) (UDPSocket, error) { return UDPSocket{}, errNoUDPTable }

// ReadProcNetUDP is Linux-only (udpstats_linux.go).
func ReadProcNetUDP(string) ([]UDPSocket, error) { return nil, errNoUDPTable }
