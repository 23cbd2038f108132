package transport

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// UDPSocket is what the kernel says about one UDP socket: one row of
// Linux's /proc/net/udp or /proc/net/udp6.
//
// QUIC runs over UDP, and a process too busy to read its socket loses
// datagrams in the kernel once the socket's receive buffer is full. QUIC
// then recovers them by its retransmission timer, which doubles with every
// loss in a row, so a busy second turns into seconds of silence. Nothing
// in the process sees those datagrams, so only the kernel's count tells a
// starved reader apart from a silent peer (docs/PERFORMANCE.md, "Workers":
// at 3,500 simulated workers on two cores the simulator's sockets dropped
// tens of thousands while the controllers' dropped none).
type UDPSocket struct {
	Local   netip.AddrPort // the bound address (unspecified for a wildcard bind)
	RxQueue uint64         // bytes waiting to be read
	Inode   uint64         // the socket's inode, as fstat reports it for its descriptor
	Drops   uint64         // datagrams the kernel dropped since the socket opened
}

// maxProcNetUDP bounds what ParseProcNetUDP reads: a row is under 160
// bytes, so this is tens of thousands of sockets.
const maxProcNetUDP = 16 << 20

// errProcNetUDP marks input that is not /proc/net/udp's format.
var errProcNetUDP = errors.New("not /proc/net/udp format")

// ParseProcNetUDP parses the content of /proc/net/udp or /proc/net/udp6:
// a header line, then one row per socket,
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
//
// with addresses as hex words in the host's byte order and the port in
// hex. Malformed input is an error, never a panic.
func ParseProcNetUDP(data []byte) ([]UDPSocket, error) {
	if len(data) > maxProcNetUDP {
		return nil, fmt.Errorf("parse /proc/net/udp: %d bytes, more than %d: %w", len(data), maxProcNetUDP, errProcNetUDP)
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) == 0 || !bytes.Contains(lines[0], []byte("local_address")) {
		return nil, fmt.Errorf("parse /proc/net/udp: no header line: %w", errProcNetUDP)
	}
	var out []UDPSocket
	for i, line := range lines[1:] {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		s, err := parseUDPRow(f)
		if err != nil {
			return nil, fmt.Errorf("parse /proc/net/udp line %d: %w", i+2, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseUDPRow(f [][]byte) (UDPSocket, error) {
	if len(f) < 13 {
		return UDPSocket{}, fmt.Errorf("%d fields, want 13: %w", len(f), errProcNetUDP)
	}
	local, err := parseHexAddrPort(f[1])
	if err != nil {
		return UDPSocket{}, err
	}
	_, rx, ok := bytes.Cut(f[4], []byte(":"))
	if !ok {
		return UDPSocket{}, fmt.Errorf("queues %q: %w", f[4], errProcNetUDP)
	}
	rxq, err := strconv.ParseUint(string(rx), 16, 64)
	if err != nil {
		return UDPSocket{}, fmt.Errorf("rx_queue %q: %w", rx, errProcNetUDP)
	}
	inode, err := strconv.ParseUint(string(f[9]), 10, 64)
	if err != nil {
		return UDPSocket{}, fmt.Errorf("inode %q: %w", f[9], errProcNetUDP)
	}
	drops, err := strconv.ParseUint(string(f[12]), 10, 64)
	if err != nil {
		return UDPSocket{}, fmt.Errorf("drops %q: %w", f[12], errProcNetUDP)
	}
	return UDPSocket{Local: local, RxQueue: rxq, Inode: inode, Drops: drops}, nil
}

// parseHexAddrPort parses "0100007F:1BA9" (IPv4) or 32 hex digits and a
// port (IPv6). Each 32-bit word of the address is printed as a number in
// the host's byte order.
func parseHexAddrPort(b []byte) (netip.AddrPort, error) {
	a, p, ok := bytes.Cut(b, []byte(":"))
	if !ok || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", b, errProcNetUDP)
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q: %w", p, errProcNetUDP)
	}
	raw := make([]byte, len(a)/2)
	if _, err := hex.Decode(raw, a); err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", a, errProcNetUDP)
	}
	for i := 0; i < len(raw); i += 4 {
		// The kernel printed the word as the host read it: put its bytes
		// back in memory order.
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw) // 4 or 16 bytes: always valid
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}

// MatchUDPSockets returns the rows bound to addr: its exact address and
// port, or a wildcard bind on its port.
func MatchUDPSockets(rows []UDPSocket, addr netip.AddrPort) []UDPSocket {
	var out []UDPSocket
	want := netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	for _, r := range rows {
		if r.Local.Port() != want.Port() {
			continue
		}
		if r.Local.Addr() == want.Addr() || r.Local.Addr().IsUnspecified() {
			out = append(out, r)
		}
	}
	return out
}
