package sandbox

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runProbe runs the test binary's probe inside a launcher for spec and
// returns its lines by name.
func runProbe(t *testing.T, spec Spec, probe string) map[string]string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec.Exec = append(spec.Exec, self)
	spec.Exec = append(spec.Exec, Loaders(self)...)
	l := NewLauncher(spec)
	defer l.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Start(Command{Path: self, Args: []string{self}, Dir: spec.Workspace, Env: []string{probeEnv + "=" + probe}, Stdout: w, Stderr: w})
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	r.Close()
	if ws, err := p.Wait(); err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("probe: %v %v\n%s", ws, err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, res, ok := strings.Cut(sc.Text(), " "); ok {
			got[name] = res
		}
	}
	return got
}

// TestSocketFamiliesWithNetworkOff: with the network off, a confined
// process can create no socket, only connected Unix pairs: no MPTCP (which
// Landlock's TCP rules do not see), UDP, SCTP, raw, packet, netlink or
// other family, and no Unix socket (Landlock does not check connecting to
// a named one), whether or not it has a network namespace; io_uring and
// the keyrings are refused too.
func TestSocketFamiliesWithNetworkOff(t *testing.T) {
	requireLandlock(t)
	for _, ns := range []bool{false, true} {
		if ns && !Describe().Namespaces {
			continue
		}
		spec := testSpec(t)
		spec.Namespaces = ns
		got := runProbe(t, spec, "sockets")
		for _, c := range socketCases {
			want := "EPERM"
			if c.name == "unix-pair" {
				want = "ok"
			}
			if got[c.name] != want {
				t.Errorf("namespaces=%v: %s: got %q, want %q", ns, c.name, got[c.name], want)
			}
		}
		for _, name := range []string{"io_uring", "keyctl"} {
			if got[name] != "EPERM" {
				t.Errorf("namespaces=%v: %s: got %q, want EPERM", ns, name, got[name])
			}
		}
	}
}

// TestSocketFamiliesWithConnectList: with a connect list, the only
// sockets that reach the network are TCP ones, which Landlock checks by
// port.
func TestSocketFamiliesWithConnectList(t *testing.T) {
	requireLandlock(t)
	spec := testSpec(t)
	spec.Connect = []uint16{5432}
	got := runProbe(t, spec, "sockets")
	allowed := map[string]bool{"unix-pair": true, "tcp4": true, "tcp4-flags-proto": true, "tcp6": true}
	for _, c := range socketCases {
		want := "EPERM"
		if allowed[c.name] {
			want = "ok"
		}
		if got[c.name] != want {
			t.Errorf("%s: got %q, want %q", c.name, got[c.name], want)
		}
	}
}

// TestSocketFamiliesWithNetworkAny: network any leaves sockets alone but
// still refuses io_uring and the keyrings.
func TestSocketFamiliesWithNetworkAny(t *testing.T) {
	requireLandlock(t)
	spec := testSpec(t)
	spec.Network = NetworkAny
	got := runProbe(t, spec, "sockets")
	for _, name := range []string{"unix-stream", "tcp4", "udp4", "mptcp4"} {
		if got[name] != "ok" {
			t.Errorf("%s: got %q, want ok", name, got[name])
		}
	}
	for _, name := range []string{"io_uring", "keyctl"} {
		if got[name] != "EPERM" {
			t.Errorf("%s: got %q, want EPERM", name, got[name])
		}
	}
}

// TestConnectListNamesResolve: with a connect list, commands cannot ask
// DNS (no UDP), so the helper adds the listed hosts' addresses to their
// /etc/hosts (with a mount namespace).
func TestConnectListNamesResolve(t *testing.T) {
	st := requireLandlock(t)
	if !st.Namespaces {
		t.Skipf("no namespaces here: %s", st.Reason)
	}
	spec := testSpec(t)
	spec.Connect = []uint16{5432}
	spec.Hosts = map[string][]string{"db.ruleagent-test.invalid": {"127.0.0.1"}}
	getent, err := exec.LookPath("getent")
	if err != nil {
		t.Skip("getent is not installed")
	}
	spec.Exec = append(spec.Exec, getent)
	l := NewLauncher(spec)
	defer l.Close()
	p, r := startSh(t, l, spec.Workspace, "getent hosts db.ruleagent-test.invalid; getent hosts localhost; echo end")
	out, _ := io.ReadAll(r)
	r.Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("127.0.0.1       db.ruleagent-test.invalid")) && !bytes.Contains(out, []byte("127.0.0.1 db.ruleagent-test.invalid")) {
		t.Fatalf("the listed host does not resolve inside the sandbox:\n%s", out)
	}
	if !bytes.Contains(out, []byte("localhost")) {
		t.Fatalf("the system's own /etc/hosts entries are gone:\n%s", out)
	}
	if b, _ := os.ReadFile("/etc/hosts"); bytes.Contains(b, []byte("ruleagent-test")) {
		t.Fatal("the host's /etc/hosts was changed")
	}
}

// TestSocketFamiliesWithLoopback: in a private loopback namespace the
// commands may use IP and routing netlink (which reach nothing but the
// namespace), still no Unix socket and no other family.
func TestSocketFamiliesWithLoopback(t *testing.T) {
	st := requireLandlock(t)
	if !st.Namespaces {
		t.Skipf("no namespaces here: %s", st.Reason)
	}
	spec := testSpec(t)
	spec.Network = NetworkLoopback
	got := runProbe(t, spec, "sockets")
	for name, want := range map[string]string{"tcp4": "ok", "udp4": "ok", "mptcp4": "ok", "netlink-route": "ok", "unix-pair": "ok",
		"unix-stream": "EPERM", "netlink-audit": "EPERM", "packet": "EPERM", "vsock": "EPERM", "alg": "EPERM", "io_uring": "EPERM"} {
		if got[name] != want {
			t.Errorf("%s: got %q, want %q", name, got[name], want)
		}
	}
}
