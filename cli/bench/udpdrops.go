package bench

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/corral-dev/corral/transport"
)

// socketDrops is what the kernel counted against the bench's own UDP
// sockets and the local controllers' cluster sockets: datagrams dropped
// because a socket's receive buffer was full. QUIC recovers each such
// loss on a timer that doubles with every loss in a row, so a process too
// busy to read its socket turns a busy second into seconds of silence. On
// one machine that process is as often the simulator as a controller, and
// only these counts tell the two apart (docs/PERFORMANCE.md, "Workers").
type socketDrops struct {
	sim   uint64            // the simulated workers' sockets, summed
	simOK bool              // the kernel reported on them (Linux)
	ctrl  map[string]uint64 // controller cluster address -> drops on the socket bound there, if local
}

type udpSocketReader interface {
	UDPSocket() (transport.UDPSocket, error)
}

// readSocketDrops reads the counts now. A controller not on this machine
// (or not on Linux) is left out; so are dialers that cannot say.
func readSocketDrops(dialers []transport.StreamDialer, controllers []string) socketDrops {
	d := socketDrops{ctrl: map[string]uint64{}}
	for _, dl := range dialers {
		r, ok := dl.(udpSocketReader)
		if !ok {
			continue
		}
		if s, err := r.UDPSocket(); err == nil {
			d.sim += s.Drops
			d.simOK = true
		}
	}
	var rows []transport.UDPSocket
	for _, path := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		rs, err := transport.ReadProcNetUDP(path)
		if err != nil {
			return d
		}
		rows = append(rows, rs...)
	}
	for _, c := range controllers {
		ap, err := netip.ParseAddrPort(c)
		if err != nil {
			continue // a host name: not resolved here, and likely not this machine
		}
		if m := transport.MatchUDPSockets(rows, ap); len(m) > 0 {
			var n uint64
			for _, s := range m {
				n += s.Drops
			}
			d.ctrl[c] = n
		}
	}
	return d
}

// report is one line: the simulator's drops since from, and each local
// controller's since its socket opened (a restarted one starts again at 0).
func (d socketDrops) report(phase string, from socketDrops) string {
	var b strings.Builder
	fmt.Fprintf(&b, "datagrams dropped by the kernel (a socket's receive buffer full) %s: ", phase)
	if d.simOK {
		fmt.Fprintf(&b, "simulated workers %d", d.sim-min(from.sim, d.sim))
	} else {
		b.WriteString("simulated workers not measured (Linux only)")
	}
	if len(d.ctrl) > 0 {
		addrs := make([]string, 0, len(d.ctrl))
		for a := range d.ctrl {
			addrs = append(addrs, a)
		}
		slices.Sort(addrs)
		b.WriteString("; controllers (since each socket opened)")
		for _, a := range addrs {
			fmt.Fprintf(&b, " %s=%d", a, d.ctrl[a])
		}
	}
	return b.String()
}

// simulatorStarved says whether the simulated workers lost datagrams
// since from: then fencings measure this process, not the controllers.
func (d socketDrops) simulatorStarved(from socketDrops) bool {
	return d.simOK && d.sim > from.sim
}

// simulatorStarvedNote explains a run whose simulator lost datagrams.
const simulatorStarvedNote = "NOTE: the simulated workers' own sockets dropped datagrams: this process could not read them fast " +
	"enough on this machine, and QUIC's retransmission backs off with each loss, so workers went silent from the " +
	"simulator's side. Fencings in such a run may be the simulator's limit rather than the controllers' (whose " +
	"counts are above): run fewer workers, or split them over machines."
