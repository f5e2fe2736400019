//go:build linux && amd64

package sandbox

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// foreignSocketProgram is a static x86-64 ELF of 25 instructions' worth of
// bytes that makes socket(AF_INET, SOCK_STREAM, 0) through the 32-bit
// entry point (int 0x80, i386's socket is 359) and exits with the low byte
// of the result: the descriptor (3) when the call succeeded, 256-errno
// when it failed (255 EPERM, 218 ENOSYS). A filter that checked only the
// native calling convention would let it create a socket with the network
// off.
func foreignSocketProgram() []byte {
	code := []byte{
		0xb8, 0x67, 0x01, 0x00, 0x00, // mov eax, 359 (i386 socket)
		0xbb, 0x02, 0x00, 0x00, 0x00, // mov ebx, AF_INET
		0xb9, 0x01, 0x00, 0x00, 0x00, // mov ecx, SOCK_STREAM
		0x31, 0xd2, // xor edx, edx
		0xcd, 0x80, // int 0x80
		0x89, 0xc7, // mov edi, eax
		0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60 (exit)
		0x0f, 0x05, // syscall
	}
	const base, ehsize, phsize = 0x400000, 64, 56
	size := uint64(ehsize + phsize + len(code))
	b := make([]byte, 0, size)
	le := binary.LittleEndian
	// ELF header
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint16(b, 2)                  // ET_EXEC
	b = le.AppendUint16(b, 62)                 // EM_X86_64
	b = le.AppendUint32(b, 1)                  // EV_CURRENT
	b = le.AppendUint64(b, base+ehsize+phsize) // entry
	b = le.AppendUint64(b, ehsize)             // program headers' offset
	b = le.AppendUint64(b, 0)                  // section headers' offset
	b = le.AppendUint32(b, 0)                  // flags
	b = le.AppendUint16(b, ehsize)             // header size
	b = le.AppendUint16(b, phsize)             // program header size
	b = le.AppendUint16(b, 1)                  // one program header
	b = le.AppendUint16(b, 64)                 // section header size
	b = le.AppendUint16(b, 0)                  // no section headers
	b = le.AppendUint16(b, 0)                  // no names
	// PT_LOAD, R+X, the whole file at base
	b = le.AppendUint32(b, 1)
	b = le.AppendUint32(b, 5)
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, 0x1000)
	return append(b, code...)
}

// exitCode runs path (directly, or through l) and returns its exit status.
func exitCode(t *testing.T, l *Launcher, path, dir string) int {
	t.Helper()
	if l == nil {
		err := exec.Command(path).Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee) && ee.Exited():
			return ee.ExitCode()
		case errors.As(err, &ee):
			return -1 // killed by a signal: no 32-bit entry point here
		}
		t.Fatal(err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	p, err := l.Start(Command{Path: path, Args: []string{path}, Dir: dir, Stdout: null, Stderr: null})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !ws.Exited() {
		return -1
	}
	return ws.ExitStatus()
}

// TestForeignEntryPointsRefused: a confined process with the network off
// cannot create a socket through x86-64's 32-bit entry point (int 0x80),
// which seccomp reports under another architecture, nor through the x32
// ABI's system call numbers: the filter answers both ENOSYS. Outside the
// sandbox the same program does create its socket, so the test shows the
// filter, not a kernel without 32-bit emulation. (Kernels built without
// x32, Debian's among them, answer x32 numbers ENOSYS themselves: that half
// guards the filter only where x32 exists.)
func TestForeignEntryPointsRefused(t *testing.T) {
	requireLandlock(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "int80-socket")
	if err := os.WriteFile(prog, foreignSocketProgram(), 0o755); err != nil {
		t.Fatal(err)
	}
	switch code := exitCode(t, nil, prog, dir); code {
	case 3:
	case -1, 256 - int(unix.ENOSYS):
		t.Skipf("this kernel has no 32-bit entry point (int 0x80 exits %d): nothing to refuse", code)
	default:
		t.Fatalf("unconfined, the int 0x80 socket call exited %d, want 3 (a descriptor)", code)
	}
	for _, ns := range []bool{false, true} {
		if ns && !Describe().Namespaces {
			continue
		}
		spec := testSpec(t)
		spec.Namespaces = ns
		spec.Exec = append(spec.Exec, prog)
		l := NewLauncher(spec)
		code := exitCode(t, l, prog, spec.Workspace)
		l.Close()
		if want := 256 - int(unix.ENOSYS); code != want {
			t.Errorf("namespaces=%v: confined, the int 0x80 socket call exited %d, want %d (ENOSYS)", ns, code, want)
		}
		spec = testSpec(t)
		spec.Namespaces = ns
		got := runProbe(t, spec, "x32")
		if got["x32-socket"] != "ENOSYS" {
			t.Errorf("namespaces=%v: x32 socket: got %q, want ENOSYS", ns, got["x32-socket"])
		}
	}
}
