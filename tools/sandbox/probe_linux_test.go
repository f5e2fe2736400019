package sandbox

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the program the tests run inside the sandbox:
// with probeEnv set it makes the system calls a hostile command would make
// and prints one line per attempt, "<name> ok" or "<name> <errno>".

const probeEnv = "RULEAGENT_SANDBOX_TEST_PROBE"

func TestMain(m *testing.M) {
	switch os.Getenv(probeEnv) {
	case "":
	case "sockets":
		probeSockets()
		os.Exit(0)
	case "x32":
		// socket(AF_INET, SOCK_STREAM) by its x32 ABI number (x86-64 only).
		_, _, e := unix.RawSyscall(x32SyscallBit|unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
		report("x32-socket", e)
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown probe", os.Getenv(probeEnv))
		os.Exit(2)
	}
	if os.Getenv(nonDumpableEnv) == "1" {
		// As ruleagent does at start (cmd/ruleagent/envguard_linux.go).
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
	os.Exit(m.Run())
}

// nonDumpableEnv makes the test process non-dumpable before any test, as
// the ruleagent server is.
const nonDumpableEnv = "RULEAGENT_SANDBOX_TEST_NONDUMPABLE"

// socketCase is one socket(2) call.
type socketCase struct {
	name                  string
	family, typ, protocol uintptr
	pair                  bool
}

const ipprotoMPTCP = 262

var socketCases = []socketCase{
	{name: "unix-stream", family: unix.AF_UNIX, typ: unix.SOCK_STREAM},
	{name: "unix-dgram", family: unix.AF_UNIX, typ: unix.SOCK_DGRAM | unix.SOCK_CLOEXEC},
	{name: "unix-pair", family: unix.AF_UNIX, typ: unix.SOCK_STREAM, pair: true},
	{name: "tcp4", family: unix.AF_INET, typ: unix.SOCK_STREAM},
	{name: "tcp4-flags-proto", family: unix.AF_INET, typ: unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, protocol: unix.IPPROTO_TCP},
	{name: "tcp6", family: unix.AF_INET6, typ: unix.SOCK_STREAM},
	// The kernel reads int arguments: high bits set beside SOCK_STREAM
	// or AF_UNIX must not slip past the filter.
	{name: "tcp4-high-bits", family: unix.AF_INET, typ: unix.SOCK_STREAM | 1<<32},
	{name: "unix-high-bits", family: unix.AF_UNIX | 1<<32, typ: unix.SOCK_STREAM},
	{name: "mptcp4", family: unix.AF_INET, typ: unix.SOCK_STREAM, protocol: ipprotoMPTCP},
	{name: "mptcp6", family: unix.AF_INET6, typ: unix.SOCK_STREAM, protocol: ipprotoMPTCP},
	{name: "sctp4-stream", family: unix.AF_INET, typ: unix.SOCK_STREAM, protocol: unix.IPPROTO_SCTP},
	{name: "sctp4-seqpacket", family: unix.AF_INET, typ: unix.SOCK_SEQPACKET},
	{name: "udp4", family: unix.AF_INET, typ: unix.SOCK_DGRAM},
	{name: "udp6", family: unix.AF_INET6, typ: unix.SOCK_DGRAM},
	{name: "udplite4", family: unix.AF_INET, typ: unix.SOCK_DGRAM, protocol: unix.IPPROTO_UDPLITE},
	{name: "icmp4", family: unix.AF_INET, typ: unix.SOCK_DGRAM, protocol: unix.IPPROTO_ICMP},
	{name: "raw4", family: unix.AF_INET, typ: unix.SOCK_RAW, protocol: unix.IPPROTO_RAW},
	{name: "packet", family: unix.AF_PACKET, typ: unix.SOCK_RAW},
	{name: "netlink-route", family: unix.AF_NETLINK, typ: unix.SOCK_RAW, protocol: unix.NETLINK_ROUTE},
	{name: "netlink-audit", family: unix.AF_NETLINK, typ: unix.SOCK_RAW, protocol: unix.NETLINK_AUDIT},
	{name: "vsock", family: unix.AF_VSOCK, typ: unix.SOCK_STREAM},
	{name: "alg", family: unix.AF_ALG, typ: unix.SOCK_SEQPACKET},
	{name: "xdp", family: unix.AF_XDP, typ: unix.SOCK_RAW},
	{name: "tipc", family: unix.AF_TIPC, typ: unix.SOCK_RDM},
	{name: "inet-pair", family: unix.AF_INET, typ: unix.SOCK_STREAM, pair: true},
}

func probeSockets() {
	for _, c := range socketCases {
		nr := uintptr(unix.SYS_SOCKET)
		var fds [2]int32
		args := [4]uintptr{c.family, c.typ, c.protocol, 0}
		if c.pair {
			nr = unix.SYS_SOCKETPAIR
			args[3] = uintptr(unsafe.Pointer(&fds[0]))
		}
		fd, _, e := unix.RawSyscall6(nr, args[0], args[1], args[2], args[3], 0, 0)
		report(c.name, e)
		if e == 0 {
			unix.Close(int(fd))
			if c.pair {
				unix.Close(int(fds[0]))
				unix.Close(int(fds[1]))
			}
		}
	}
	// io_uring_setup(1, NULL): EFAULT from the kernel, EPERM from the filter.
	_, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
	report("io_uring", e)
	userKeyring := int64(unix.KEY_SPEC_USER_KEYRING)
	_, _, e = unix.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(userKeyring), 0)
	report("keyctl", e)
}

func report(name string, e unix.Errno) {
	if e == 0 {
		fmt.Println(name, "ok")
		return
	}
	fmt.Println(name, strings.ReplaceAll(unix.ErrnoName(e), " ", "_"))
}
