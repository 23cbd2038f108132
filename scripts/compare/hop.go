package main

// compare hop: what one message hop costs between two processes over
// QUIC, as corral's raft messages travel, against TCP with TLS 1.3, as
// ZooKeeper's and etcd's do (etcd's with TLS). A 300-byte request and its
// echo, one in flight, with a pause after each so that both processes go
// idle in between, as they do between a lone client's writes: each hop
// then pays for waking the receiver. It reports the round trip's p50/p99
// and the CPU time and context switches of each process per round trip
// (getrusage: all threads). docs/PERFORMANCE.md, "One hop over QUIC and
// over TCP".

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
)

// hopServeEnv makes the process the echo server of one hop run (the
// transport in its value); the client starts it as a child of its own.
const hopServeEnv = "COMPARE_HOP_SERVE"

// hopAckEvery is corral's raft connections' setting (transport.ackEvery).
const hopAckEvery = 10

type hopResult struct {
	mode                 string
	p50, p99             time.Duration
	clientCPU, serverCPU time.Duration // per round trip
	clientSw, serverSw   float64       // per round trip
}

func runHop(args []string) error {
	flags := flag.NewFlagSet("compare hop", flag.ContinueOnError)
	n := flags.Int("n", 5000, "round trips per run (10-1000000)")
	rounds := flags.Int("rounds", 2, "runs of each transport, alternating (1-20)")
	gap := flags.Duration("gap", time.Millisecond, "pause after each round trip (0-1s)")
	size := flags.Int("bytes", 300, "message size (1-65536)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *n < 10 || *n > 1000000 || *rounds < 1 || *rounds > 20 || *gap < 0 || *gap > time.Second || *size < 1 || *size > 65536 {
		return errors.New("out of range: -n 10-1000000, -rounds 1-20, -gap 0-1s, -bytes 1-65536")
	}
	var all []hopResult
	for r := range *rounds {
		order := []string{"tcp", "quic"}
		if r%2 == 1 {
			order = []string{"quic", "tcp"}
		}
		for _, mode := range order {
			res, err := hopRun(mode, *n, *size, *gap)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", mode, r+1, err)
			}
			fmt.Printf("round %d %-4s p50 %v p99 %v  client %v %.1f switches  server %v %.1f switches per round trip\n",
				r+1, mode, res.p50.Round(time.Microsecond), res.p99.Round(time.Microsecond),
				res.clientCPU.Round(time.Microsecond), res.clientSw, res.serverCPU.Round(time.Microsecond), res.serverSw)
			all = append(all, res)
		}
	}
	fmt.Println()
	fmt.Println("| transport | round trip p50 | p99 | CPU per round trip, client + server | switches per round trip |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, r := range all {
		fmt.Printf("| %s | %.0f µs | %.0f µs | %.0f + %.0f µs | %.1f + %.1f |\n", r.mode,
			us(r.p50), us(r.p99), us(r.clientCPU), us(r.serverCPU), r.clientSw, r.serverSw)
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// hopRun starts the echo server as a child process and times n round trips.
func hopRun(mode string, n, size int, gap time.Duration) (hopResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return hopResult{}, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), hopServeEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return hopResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return hopResult{}, err
	}
	defer cmd.Process.Kill() //nolint:errcheck // gone already on success
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		return hopResult{}, fmt.Errorf("echo server did not start: %v", lines.Err())
	}
	addr := strings.TrimSpace(lines.Text())
	rw, err := hopDial(mode, addr)
	if err != nil {
		return hopResult{}, err
	}
	msg := make([]byte, 4+size)
	binary.BigEndian.PutUint32(msg, uint32(size))
	reply := make([]byte, len(msg))
	lat := make([]time.Duration, 0, n)
	cpu0, sw0 := rusage()
	for range n {
		t := time.Now()
		if _, err := rw.Write(msg); err != nil {
			return hopResult{}, err
		}
		if _, err := io.ReadFull(rw, reply); err != nil {
			return hopResult{}, err
		}
		lat = append(lat, time.Since(t))
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	cpu1, sw1 := rusage()
	_ = rw.Close()
	var scpu, ssw int64
	if !lines.Scan() {
		return hopResult{}, fmt.Errorf("echo server gave no usage: %v", lines.Err())
	}
	if _, err := fmt.Sscanf(lines.Text(), "%d %d", &scpu, &ssw); err != nil {
		return hopResult{}, fmt.Errorf("echo server usage %q: %w", lines.Text(), err)
	}
	if err := cmd.Wait(); err != nil {
		return hopResult{}, fmt.Errorf("echo server: %w", err)
	}
	slices.Sort(lat)
	return hopResult{mode: mode, p50: lat[len(lat)/2], p99: lat[len(lat)*99/100],
		clientCPU: (cpu1 - cpu0) / time.Duration(n), clientSw: float64(sw1-sw0) / float64(n),
		serverCPU: time.Duration(scpu) / time.Duration(n), serverSw: float64(ssw) / float64(n)}, nil
}

func hopDial(mode, addr string) (io.ReadWriteCloser, error) {
	conf, err := hopTLS()
	if err != nil {
		return nil, err
	}
	conf.InsecureSkipVerify = true // a throwaway self-signed certificate; the cost measured is the same
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch mode {
	case "tcp":
		c, err := (&tls.Dialer{Config: conf}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return c.(*tls.Conn), nil
	case "quic":
		c, err := quic.DialAddr(ctx, addr, conf, &quic.Config{AckElicitingThreshold: hopAckEvery})
		if err != nil {
			return nil, err
		}
		return c.OpenStreamSync(ctx)
	}
	return nil, fmt.Errorf("unknown transport %q", mode)
}

// hopServe is the child: it listens on loopback, prints its address,
// echoes one connection's messages until it closes, then prints its own
// CPU time (ns) and context switches.
func hopServe(mode string) error {
	conf, err := hopTLS()
	if err != nil {
		return err
	}
	conf.ClientAuth = tls.RequireAnyClientCert // mutual TLS, as corral's links
	var rw io.ReadWriter
	switch mode {
	case "tcp":
		ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
		if err != nil {
			return err
		}
		fmt.Println(ln.Addr())
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		rw = c
	case "quic":
		ln, err := quic.ListenAddr("127.0.0.1:0", conf, &quic.Config{AckElicitingThreshold: hopAckEvery})
		if err != nil {
			return err
		}
		fmt.Println(ln.Addr())
		c, err := ln.Accept(context.Background())
		if err != nil {
			return err
		}
		s, err := c.AcceptStream(context.Background())
		if err != nil {
			return err
		}
		rw = s
	default:
		return fmt.Errorf("unknown transport %q", mode)
	}
	hopEcho(rw)
	cpu, sw := rusage()
	fmt.Println(cpu.Nanoseconds(), sw)
	return nil
}

// hopEcho sends back every length-prefixed message until the stream ends.
func hopEcho(rw io.ReadWriter) {
	buf := make([]byte, 4+65536)
	for {
		if _, err := io.ReadFull(rw, buf[:4]); err != nil {
			return
		}
		m := binary.BigEndian.Uint32(buf[:4])
		if m > 65536 {
			return
		}
		if _, err := io.ReadFull(rw, buf[4:4+m]); err != nil {
			return
		}
		if _, err := rw.Write(buf[:4+m]); err != nil {
			return
		}
	}
}

// hopTLS is a TLS 1.3 configuration with a fresh self-signed P-256 key,
// as corral's certificates use.
func hopTLS() (*tls.Config, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}},
		NextProtos: []string{"compare-hop"}, MinVersion: tls.VersionTLS13}, nil
}

// rusage is this process's CPU time and context switches so far.
func rusage() (time.Duration, int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw + ru.Nivcsw
}
