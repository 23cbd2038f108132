package transport

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kernelHex prints an address as Linux does in /proc/net/udp: each 32-bit
// word as a number read in the host's byte order.
func kernelHex(ap netip.AddrPort) string {
	var b strings.Builder
	raw := ap.Addr().AsSlice()
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(raw[i:]))
	}
	fmt.Fprintf(&b, ":%04X", ap.Port())
	return b.String()
}

const procNetUDPHeader = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops             \n"

func udpRow(sl int, local netip.AddrPort, rx uint64, inode, drops uint64) string {
	remote := "00000000:0000"
	if local.Addr().Is6() {
		remote = strings.Repeat("0", 32) + ":0000"
	}
	return fmt.Sprintf(" %4d: %s %s 07 00000000:%08X 00:00000000 00000000     0        0 %d 2 00000000f59fe327 %d\n",
		sl, kernelHex(local), remote, rx, inode, drops)
}

func TestParseProcNetUDP(t *testing.T) {
	t.Parallel()
	v4 := netip.MustParseAddrPort("127.0.0.1:7081")
	v6 := netip.MustParseAddrPort("[::1]:49628")
	any6 := netip.MustParseAddrPort("[::]:7082")
	data := procNetUDPHeader + udpRow(8900, v4, 0x395, 38701, 0) + udpRow(12, v6, 0, 38800, 60934) + udpRow(13, any6, 7, 99, 3)
	rows, err := ParseProcNetUDP([]byte(data))
	require.NoError(t, err)
	require.Equal(t, []UDPSocket{
		{Local: v4, RxQueue: 0x395, Inode: 38701, Drops: 0},
		{Local: v6, RxQueue: 0, Inode: 38800, Drops: 60934},
		{Local: any6, RxQueue: 7, Inode: 99, Drops: 3},
	}, rows)

	// A wildcard bind matches any address on its port; an exact one only itself.
	require.Equal(t, rows[2:3], MatchUDPSockets(rows, netip.MustParseAddrPort("127.0.0.1:7082")))
	require.Equal(t, rows[0:1], MatchUDPSockets(rows, v4))
	require.Empty(t, MatchUDPSockets(rows, netip.MustParseAddrPort("127.0.0.2:7081")))

	// What this machine's kernel printed (little-endian hosts only).
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		rows, err := ParseProcNetUDP([]byte(procNetUDPHeader +
			" 8900: 0100007F:1BA9 00000000:0000 07 00000000:00000395 00:00000000 00000000     0        0 38701 2 00000000f59fe327 0         \n"))
		require.NoError(t, err)
		require.Equal(t, []UDPSocket{{Local: v4, RxQueue: 0x395, Inode: 38701}}, rows)
	}

	empty, err := ParseProcNetUDP([]byte(procNetUDPHeader))
	require.NoError(t, err)
	require.Empty(t, empty)
}

func TestParseProcNetUDP_RefusesMalformedInput(t *testing.T) {
	t.Parallel()
	good := strings.Fields(udpRow(1, netip.MustParseAddrPort("127.0.0.1:1"), 0, 1, 0))
	with := func(i int, v string) string {
		f := append([]string(nil), good...)
		f[i] = v
		return procNetUDPHeader + strings.Join(f, " ") + "\n"
	}
	for name, in := range map[string]string{
		"no header":          strings.Join(good, " "),
		"empty":              "",
		"short row":          procNetUDPHeader + strings.Join(good[:12], " "),
		"address length":     with(1, "7F00:0001"),
		"address not hex":    with(1, "0100007G:0001"),
		"port too large":     with(1, "0100007F:10000"),
		"no port":            with(1, "0100007F"),
		"queues without rx":  with(4, "00000000"),
		"rx not hex":         with(4, "00000000:XYZ"),
		"inode not a number": with(9, "-1"),
		"drops not a number": with(12, "lots"),
	} {
		_, err := ParseProcNetUDP([]byte(in))
		require.ErrorIs(t, err, errProcNetUDP, name)
	}
	_, err := ParseProcNetUDP(make([]byte, maxProcNetUDP+1))
	require.ErrorIs(t, err, errProcNetUDP)
}

func FuzzParseProcNetUDP(f *testing.F) {
	f.Add([]byte(procNetUDPHeader + udpRow(1, netip.MustParseAddrPort("127.0.0.1:7081"), 5, 7, 9)))
	f.Add([]byte(procNetUDPHeader + udpRow(2, netip.MustParseAddrPort("[fe80::1]:1"), 0, 0, 0)))
	f.Add([]byte(procNetUDPHeader))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParseProcNetUDP(data)
		if err != nil {
			return
		}
		for _, r := range rows {
			if !r.Local.Addr().IsValid() {
				t.Fatalf("row with an invalid address: %+v", r)
			}
		}
	})
}
