package adversarial_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Landlock's network rules see TCP only. Every other way out (MPTCP,
// which reaches an ordinary TCP listener; UDP; SCTP) must be refused by
// the kernel too, with the network off and with a connect list, where the
// commands share the host's network and Landlock alone decides.

// netListeners is a TCP listener and a UDP socket on loopback that count
// what reaches them.
type netListeners struct {
	tcpPort, udpPort string
	tcp, udp         atomic.Int32
}

func newNetListeners(t *testing.T) *netListeners {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &netListeners{tcpPort: strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), udpPort: strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)}
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.tcp.Add(1)
			c.Close()
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			l.udp.Add(1)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		pc.Close()
		<-done
		<-done
	})
	return l
}

// settle gives late packets and connections time to arrive before the
// counters are read.
func (l *netListeners) settle() (tcp, udp int32) {
	time.Sleep(100 * time.Millisecond)
	return l.tcp.Load(), l.udp.Load()
}

// perlMPTCP connects to 127.0.0.1:port over MPTCP (IPPROTO_MPTCP, 262).
func perlMPTCP(port string) string {
	return `perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 262) or die "socket: $!\n"; connect($s, pack_sockaddr_in(` + port + `, inet_aton("127.0.0.1"))) or die "connect: $!\n"; print "connected\n"'`
}

// perlUDP sends a datagram to 127.0.0.1:port.
func perlUDP(port string) string {
	return `perl -MSocket -e 'socket(my $s, PF_INET, SOCK_DGRAM, 0) or die "socket: $!\n"; for (1..3) { send($s, "x", 0, pack_sockaddr_in(` + port + `, inet_aton("127.0.0.1"))) or die "send: $!\n" } print "sent\n"'`
}

// perlSocket creates a socket of the given family, type and protocol and
// touches WSMARKER if it could.
func perlSocket(family, typ, proto string) string {
	return `perl -MSocket -e 'socket(my $s, ` + family + `, ` + typ + `, ` + proto + `) or die "socket: $!\n"; open(F, ">WSMARKER")'`
}

func requirePerl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
}

// TestKernelStopsOtherProtocolsWithNetworkOff: with the network off, no
// MPTCP connection or UDP datagram reaches a listener on loopback, and no
// socket of another family or protocol can even be created.
func TestKernelStopsOtherProtocolsWithNetworkOff(t *testing.T) {
	requireSandbox(t)
	requirePerl(t)
	l := newNetListeners(t)
	f := newSandboxFixture(t)
	cases := []kernelCase{
		{perlMPTCP(l.tcpPort), "interpreters"},
		{perlUDP(l.udpPort), "interpreters"},
		{perlSocket("PF_INET", "SOCK_STREAM", "132"), "interpreters"},  // SCTP
		{perlSocket("PF_INET", "SOCK_RAW", "255"), "interpreters"},     // raw
		{perlSocket("17", "SOCK_RAW", "0"), "interpreters"},            // AF_PACKET
		{perlSocket("16", "SOCK_RAW", "0"), "interpreters"},            // netlink
		{perlSocket("PF_INET", "SOCK_DGRAM", "1"), "interpreters"},     // ICMP echo ("ping") socket
		{perlSocket("PF_INET6", "SOCK_STREAM", "0"), "interpreters"},   // even TCP
		{perlSocket("40", "SOCK_STREAM", "0"), "interpreters"},         // vsock
		{perlSocket("PF_INET", "SOCK_DGRAM", "136"), "interpreters"},   // UDP-Lite
		{perlSocket("PF_INET6", "SOCK_STREAM", "262"), "interpreters"}, // MPTCP over IPv6
	}
	f.kernelOnly(t, map[string]any{"interpreters": "on"}, cases)
	if tcp, udp := l.settle(); tcp != 0 || udp != 0 {
		t.Fatalf("with the network off, confined commands reached loopback listeners: %d TCP (MPTCP) connections, %d UDP datagrams", tcp, udp)
	}
}

// TestKernelStopsOtherProtocolsWithConnectList: with a connect list the
// commands use the host's network, and only TCP to the listed ports gets
// out: MPTCP to another port, and UDP, do not.
func TestKernelStopsOtherProtocolsWithConnectList(t *testing.T) {
	requireSandbox(t)
	requirePerl(t)
	l := newNetListeners(t)
	f := newSandboxFixture(t)
	cases := []kernelCase{
		{perlMPTCP(l.tcpPort), "interpreters"},
		{perlUDP(l.udpPort), "interpreters"},
		{perlSocket("PF_INET", "SOCK_STREAM", "132"), "interpreters"},
		{perlSocket("16", "SOCK_RAW", "0"), "interpreters"},
	}
	// A port that nobody listens on is the one listed: the listeners'
	// ports are not.
	f.kernelOnly(t, map[string]any{"interpreters": "on", "connect": []string{"127.0.0.1:9"}}, cases)
	if tcp, udp := l.settle(); tcp != 0 || udp != 0 {
		t.Fatalf("with a connect list, confined commands reached unlisted destinations: %d MPTCP connections, %d UDP datagrams", tcp, udp)
	}
}

// TestKernelStopsNamedUnixSockets: Landlock (before ABI 9) does not check
// connecting to a named Unix socket, and those lead out of the sandbox
// (D-Bus to systemd, docker.sock, an ssh-agent): outside network "any", a
// confined command cannot create a Unix socket to connect with.
func TestKernelStopsNamedUnixSockets(t *testing.T) {
	requireSandbox(t)
	requirePerl(t)
	f := newSandboxFixture(t)
	sock := filepath.Join(f.outside, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	connect := `perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_un("` + sock + `")) or die "connect: $!\n"; open(F, ">WSMARKER")'`
	for _, config := range []map[string]any{
		{"interpreters": "on"},
		{"interpreters": "on", "connect": []string{"127.0.0.1:9"}},
		{"interpreters": "on", "network": "loopback"},
	} {
		f.kernelOnly(t, config, []kernelCase{{connect, "interpreters"}})
	}
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("confined commands connected %d times to a Unix socket outside their sandbox", n)
	}
}
