package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Landlock's network rules know TCP only (bind and connect, by port): a
// confined process could still reach any listener over MPTCP, send UDP
// anywhere, or open raw and packet sockets where it has the capability.
// Nor does Landlock before ABI 9 check connecting to a named Unix socket,
// and those lead out of any sandbox: D-Bus to systemd (which starts
// whatever it is asked to, as the caller), docker.sock, an ssh-agent, X11.
// A seccomp filter beside Landlock therefore decides which sockets may be
// created at all, so that Landlock's port rules cover every socket that
// can reach anything:
//
//   - network off (and loopback without a network namespace): none.
//     Connected Unix socket pairs (socketpair), which reach nothing but
//     the other end, are allowed in every mode. A resolver's UDP socket
//     fails at once (there is no network to ask), glibc treats a refused
//     netlink socket as "no interface information" and a refused nscd
//     socket as "no nscd", so ordinary tools keep working offline;
//   - a connect list: IPv4 and IPv6 stream sockets of protocol 0 or TCP,
//     whose connections Landlock checks by port. No UDP (so no DNS: where
//     it has a mount namespace, the helper writes the listed hosts'
//     addresses into /etc/hosts), no MPTCP or SCTP, no Unix socket;
//   - loopback in a network namespace of its own: IPv4, IPv6 and routing
//     netlink sockets, which reach nothing but that namespace;
//   - any: every socket.
//
// In every case io_uring is refused (its operations are not seen by
// seccomp filters), and so are the kernel keyrings (as root, a command
// would otherwise reach root's keys). A system call made through another
// architecture's calling convention (int 0x80 on x86-64, x32) is refused,
// so the filter cannot be side-stepped by a 32-bit entry point.
//
// The filter is assembled here with golang.org/x/net/bpf: it is small, and
// every argument is compared as the 64-bit value the filter sees, so a
// high half set beside an allowed value (the kernel reads these arguments
// as int) is refused rather than let through.

// seccompErrno is what a refused system call returns.
const seccompErrno = unix.EPERM

// seccompRefusedAlways are refused whatever the network setting.
var seccompRefusedAlways = []uint32{unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY}

// auditArch is the architecture seccomp reports for this process's native
// system calls.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64, "riscv64": unix.AUDIT_ARCH_RISCV64,
	"ppc64le": unix.AUDIT_ARCH_PPC64LE, "s390x": unix.AUDIT_ARCH_S390X, "loong64": unix.AUDIT_ARCH_LOONGARCH64,
}

// x32SyscallBit marks the x32 ABI's system calls on x86-64.
const x32SyscallBit = 0x40000000

// argCheck is one condition on a system call argument: arg, masked, equals
// value (all 64 bits).
type argCheck struct {
	arg         int
	mask, value uint64
}

func equal(arg int, v uint64) argCheck { return argCheck{arg: arg, mask: ^uint64(0), value: v} }

// socketAllowed are the socket(2) calls the spec allows, each a list of
// conditions that must all hold; nil allows every socket, an empty list
// none.
func socketAllowed(spec *Spec) [][]argCheck {
	switch {
	case spec.Network == NetworkAny:
		return nil
	case len(spec.Connect) > 0:
		// The type is SOCK_STREAM, with SOCK_NONBLOCK and SOCK_CLOEXEC
		// the only other bits allowed.
		stream := argCheck{arg: 1, mask: ^uint64(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC), value: unix.SOCK_STREAM}
		var out [][]argCheck
		for _, f := range []uint64{unix.AF_INET, unix.AF_INET6} {
			for _, p := range []uint64{0, unix.IPPROTO_TCP} {
				out = append(out, []argCheck{equal(0, f), stream, equal(2, p)})
			}
		}
		return out
	case spec.Network == NetworkLoopback && spec.inNetNS:
		return [][]argCheck{{equal(0, unix.AF_INET)}, {equal(0, unix.AF_INET6)},
			{equal(0, unix.AF_NETLINK), equal(2, unix.NETLINK_ROUTE)}}
	}
	return [][]argCheck{}
}

// filterAsm builds a BPF program with forward jumps to labels.
type filterAsm struct {
	insts  []bpf.Instruction
	fixups map[int]string // instruction index -> label its true branch jumps to
	labels map[string]int
}

func (a *filterAsm) emit(i bpf.Instruction) { a.insts = append(a.insts, i) }

// jumpIfNot emits "if A != v goto label" (fall through when equal).
func (a *filterAsm) jumpIfNot(v uint32, label string) {
	a.fixups[len(a.insts)] = label
	a.emit(bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: v})
}

// jumpIf emits "if A == v goto label".
func (a *filterAsm) jumpIf(v uint32, label string) {
	a.fixups[len(a.insts)] = label
	a.emit(bpf.JumpIf{Cond: bpf.JumpEqual, Val: v})
}

func (a *filterAsm) label(name string) { a.labels[name] = len(a.insts) }

func (a *filterAsm) resolve() ([]bpf.Instruction, error) {
	for at, name := range a.fixups {
		to, ok := a.labels[name]
		if !ok || to <= at || to-at-1 > 255 {
			return nil, fmt.Errorf("seccomp: bad jump to %s", name)
		}
		j := a.insts[at].(bpf.JumpIf)
		j.SkipTrue = uint8(to - at - 1)
		a.insts[at] = j
	}
	return a.insts, nil
}

// argHalves returns the offsets of the low and high 32 bits of argument i
// in struct seccomp_data.
func argHalves(i int) (lo, hi uint32) {
	off := uint32(16 + 8*i)
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return off, off + 4
	}
	return off + 4, off
}

// checks emits conditions that fall through when all hold, and jump to
// fail otherwise.
func (a *filterAsm) checks(cs []argCheck, fail string) {
	for _, c := range cs {
		lo, hi := argHalves(c.arg)
		for _, half := range []struct {
			off         uint32
			mask, value uint32
		}{{hi, uint32(c.mask >> 32), uint32(c.value >> 32)}, {lo, uint32(c.mask), uint32(c.value)}} {
			a.emit(bpf.LoadAbsolute{Off: half.off, Size: 4})
			if half.mask != ^uint32(0) {
				a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: half.mask})
			}
			a.jumpIfNot(half.value, fail)
		}
	}
}

// seccompProgram assembles the filter for spec.
func seccompProgram(spec *Spec) ([]unix.SockFilter, error) {
	native, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		refuse = unix.SECCOMP_RET_ERRNO | uint32(seccompErrno)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	a := &filterAsm{fixups: map[int]string{}, labels: map[string]int{}}
	a.emit(bpf.LoadAbsolute{Off: 4, Size: 4}) // arch
	a.jumpIfNot(native, "foreign")
	a.emit(bpf.LoadAbsolute{Off: 0, Size: 4}) // nr
	if runtime.GOARCH == "amd64" {
		a.emit(bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1})
		a.emit(bpf.RetConstant{Val: enosys})
	}
	for _, nr := range seccompRefusedAlways {
		a.jumpIf(nr, "refuse")
	}
	sockets := socketAllowed(spec)
	if sockets != nil {
		a.jumpIf(unix.SYS_SOCKET, "socket")
		a.jumpIf(unix.SYS_SOCKETPAIR, "socketpair")
	}
	a.emit(bpf.RetConstant{Val: allow})
	if sockets != nil {
		a.label("socket")
		for i, cs := range sockets {
			next := fmt.Sprintf("socket-%d", i+1)
			a.checks(cs, next)
			a.emit(bpf.RetConstant{Val: allow})
			a.label(next)
		}
		a.emit(bpf.RetConstant{Val: refuse})
		// socketpair makes connected pairs only: Unix ones are all a
		// process needs.
		a.label("socketpair")
		a.checks([]argCheck{equal(0, unix.AF_UNIX)}, "refuse")
		a.emit(bpf.RetConstant{Val: allow})
	}
	a.label("refuse")
	a.emit(bpf.RetConstant{Val: refuse})
	a.label("foreign")
	a.emit(bpf.RetConstant{Val: enosys})
	insts, err := a.resolve()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}

// loadSeccomp installs prog on the calling thread only (no TSYNC): what
// the thread starts inherits it. no_new_privs must be set.
func loadSeccomp(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
