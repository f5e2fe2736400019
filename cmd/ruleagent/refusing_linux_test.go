package main

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// refusingAddr is a loopback address that refuses every connection for
// the whole test and that no other socket can take: a TCP socket bound to
// it that never listens. A port merely freed (listen, close) may be
// handed to the next listener of any process on the machine, such as
// another test's scripted LLM, which would then answer. The socket is
// bound without SO_REUSEADDR, so even listeners that set it (Go's do)
// cannot bind the port while the test holds it.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
