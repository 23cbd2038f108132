package transport

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// ReadUDPSocket returns the kernel's row for the socket c: its receive
// queue and the datagrams dropped since it opened. It reads
// /proc/net/udp and /proc/net/udp6 of this network namespace and finds
// the row by the socket's inode.
func ReadUDPSocket(c *net.UDPConn) (UDPSocket, error) {
	inode, err := socketInode(c)
	if err != nil {
		return UDPSocket{}, err
	}
	for _, path := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		rows, err := ReadProcNetUDP(path)
		if err != nil {
			return UDPSocket{}, err
		}
		for _, r := range rows {
			if r.Inode == inode {
				return r, nil
			}
		}
	}
	return UDPSocket{}, fmt.Errorf("UDP socket %s (inode %d) is not in /proc/net/udp or udp6", c.LocalAddr(), inode)
}

// ReadProcNetUDP reads and parses one of /proc/net/udp and udp6 (a file
// that does not exist, as udp6 without IPv6, has no rows).
func ReadProcNetUDP(path string) ([]UDPSocket, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read UDP socket table: %w", err)
	}
	defer f.Close()
	// One byte past the parser's bound, so that it refuses a table too
	// large instead of this read holding all of it.
	data, err := io.ReadAll(io.LimitReader(f, maxProcNetUDP+1))
	if err != nil {
		return nil, fmt.Errorf("read UDP socket table: %w", err)
	}
	return ParseProcNetUDP(data)
}

func socketInode(c *net.UDPConn) (uint64, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("UDP socket inode: %w", err)
	}
	var st syscall.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstat(int(fd), &st) }); err != nil {
		return 0, fmt.Errorf("UDP socket inode: %w", err)
	}
	if serr != nil {
		return 0, fmt.Errorf("UDP socket inode: fstat: %w", serr)
	}
	return st.Ino, nil
}
