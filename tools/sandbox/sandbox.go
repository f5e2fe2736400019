// Package sandbox confines the processes ruleagent starts for tools (bash
// commands, stdio MCP servers) with Landlock, a Linux security module the
// kernel enforces: whatever a command does, it can execute only the
// programs of its allowlist, write only in its workspace and a private
// temporary directory, read only system files, its workspace and
// configured paths, and open no TCP connection unless allowed. Where the
// process may create namespaces (as root), a mount namespace also makes
// the workspace and the temporary directory non-executable (so that a
// program written there cannot be run, not even through the dynamic
// loader) and hides paths inside readable trees (edit backups, the data
// directory, credential folders), and a network namespace removes every
// network interface when the network is off.
//
// Confinement applies to the child only: ruleagent starts one helper
// process per tool configuration (a re-execution of its own binary), which
// forks each command from a thread it has confined, so the server process
// is never restricted and the helper's start-up is paid once, not per
// command.
//
// Off Linux, or on a kernel without Landlock, commands run unconfined (the
// best-effort mode, which warns once) or are refused (the required mode).
package sandbox

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode says whether commands must, may or must not be confined.
type Mode string

const (
	// Required refuses to run anything unconfined.
	Required Mode = "required"
	// BestEffort confines where the kernel supports it and otherwise runs
	// unconfined, with a warning.
	BestEffort Mode = "best-effort"
	// Off never confines.
	Off Mode = "off"
)

// ParseMode checks a mode name; "" is the server-wide default.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Required, BestEffort, Off:
		return m, nil
	case "":
		return DefaultMode(), nil
	}
	return "", fmt.Errorf("must be %q, %q or %q, got %q", Required, BestEffort, Off, s)
}

// Network settings.
const (
	// NetworkOff allows no TCP connection or listening socket (and, in a
	// network namespace, no network at all).
	NetworkOff = "off"
	// NetworkLoopback gives commands a private network namespace with only
	// a loopback interface: they can run servers and connect to them, and
	// reach nothing else. Without namespaces it falls back to NetworkOff.
	NetworkLoopback = "loopback"
	// NetworkAny leaves the network alone.
	NetworkAny = "any"
)

// Settings are the sandbox settings of one tool, as its config gives them.
type Settings struct {
	Mode Mode
	// Read and Write are extra paths commands may read, or read and write.
	Read, Write []string
	// Network is NetworkOff, NetworkLoopback or NetworkAny.
	Network string
	// Connect lists host:port destinations commands may open TCP
	// connections to; Landlock enforces the port (its rules carry no
	// address).
	Connect []string
}

// ParseNetwork checks the network setting and the connect list, and
// returns the ports to allow.
func ParseNetwork(network string, connect []string) ([]uint16, error) {
	switch network {
	case NetworkOff, NetworkLoopback, NetworkAny:
	default:
		return nil, fmt.Errorf("network must be %q, %q or %q, got %q", NetworkOff, NetworkLoopback, NetworkAny, network)
	}
	var ports []uint16
	for i, hp := range connect {
		colon := strings.LastIndexByte(hp, ':')
		if colon <= 0 {
			return nil, fmt.Errorf("connect[%d]: %q is not host:port", i, hp)
		}
		p, err := strconv.ParseUint(hp[colon+1:], 10, 16)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("connect[%d]: %q has no valid port", i, hp)
		}
		ports = append(ports, uint16(p))
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// ResolveHosts looks up the host names of a connect list (host:port
// entries; literal addresses need no lookup), each within timeout, for
// Spec.Hosts. Names that do not resolve are left out.
func ResolveHosts(connect []string, timeout time.Duration) map[string][]string {
	var out map[string][]string
	for _, hp := range connect {
		host := hp[:max(strings.LastIndexByte(hp, ':'), 0)]
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if host == "" || net.ParseIP(host) != nil || out[host] != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		if err != nil || len(addrs) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[host] = addrs
	}
	return out
}

// Spec is what one confined process, or the helper of one tool, is
// allowed. It is sent to the helper as JSON.
type Spec struct {
	// Workspace may be read and written; commands start in it.
	Workspace string `json:"workspace"`
	// Read and Write are extra readable, or readable and writable, paths.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Exec are the program files that may be executed (and read: the
	// dynamic loader maps what it can read).
	Exec []string `json:"exec"`
	// ExecDirs are directories whose files may be executed.
	ExecDirs []string `json:"execDirs,omitempty"`
	// Hidden are paths that must stay unreadable even inside a readable
	// tree: in a read-only tree Landlock grants around them; in a
	// writable one (the workspace) hiding them needs a mount namespace.
	Hidden []string `json:"hidden,omitempty"`
	// Protected are paths commands may read but never write, even inside
	// a writable tree (the server's chains folder); Secret ones may be
	// neither read nor written (its data directory). Landlock guarantees
	// both: a writable tree holding one is granted entry by entry around
	// it (see writeplan_linux.go), with or without namespaces.
	Protected []string `json:"protected,omitempty"`
	Secret    []string `json:"secret,omitempty"`
	// Withheld are the programs and owner-only files of the system's
	// readable trees (see withheld_linux.go); the launcher fills it in.
	Withheld []string `json:"withheld,omitempty"`
	// TmpRoot is where the private temporary directories are made.
	TmpRoot string `json:"tmpRoot"`
	// Network and Connect as in Settings.
	Network string   `json:"network"`
	Connect []uint16 `json:"connect,omitempty"`
	// Hosts are the addresses of the connect list's host names (see
	// ResolveHosts). Commands cannot resolve names themselves (no UDP, so
	// no DNS); with a mount namespace these are added to their
	// /etc/hosts.
	Hosts map[string][]string `json:"hosts,omitempty"`
	// Namespaces asks for mount and network namespaces (when the process
	// may create them).
	Namespaces bool `json:"namespaces,omitempty"`

	// inNetNS is set by the confined side once it runs in its own
	// network namespace.
	inNetNS bool
}

// Status describes the confinement this process can give, for ruleagent
// version, the tool listing and /healthz.
type Status struct {
	// Available is true when commands can be confined here.
	Available bool `json:"available"`
	// Mechanism names what confines them: "landlock" with its ABI, plus
	// the namespaces used.
	Mechanism string `json:"mechanism,omitempty"`
	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int `json:"landlockAbi"`
	// Namespaces is true when mount and network namespaces can be used.
	Namespaces bool `json:"namespaces"`
	// DefaultMode is the server-wide default.
	DefaultMode Mode `json:"defaultMode"`
	// Reason says why confinement is unavailable or partial.
	Reason string `json:"reason,omitempty"`
}

// Describe reports the confinement available to tools in this process.
func Describe() Status {
	st := probe()
	st.DefaultMode = DefaultMode()
	return st
}

// Summary is Describe as one line of text.
func Summary() string {
	st := Describe()
	if !st.Available {
		return fmt.Sprintf("commands are not confined (%s); sandbox default %s", st.Reason, st.DefaultMode)
	}
	s := fmt.Sprintf("commands are confined by %s; sandbox default %s", st.Mechanism, st.DefaultMode)
	if st.Reason != "" {
		s += " (" + st.Reason + ")"
	}
	return s
}

var defaults struct {
	sync.Mutex
	mode   Mode
	hidden []string
}

// Defaults are the server-wide sandbox settings: the mode of tools that do
// not set one, and paths no confined process may read (the data
// directory).
type Defaults struct {
	Mode   Mode
	Hidden []string
}

// SetDefaults sets the server-wide defaults; a serve --sandbox flag calls
// it once at start.
func SetDefaults(d Defaults) error {
	if d.Mode != "" {
		if _, err := ParseMode(string(d.Mode)); err != nil {
			return err
		}
	}
	defaults.Lock()
	defer defaults.Unlock()
	defaults.mode = d.Mode
	defaults.hidden = slices.Clone(d.Hidden)
	return nil
}

// DefaultMode is the mode of tools that set none: best-effort unless
// SetDefaults changed it.
func DefaultMode() Mode {
	defaults.Lock()
	defer defaults.Unlock()
	if defaults.mode == "" {
		return BestEffort
	}
	return defaults.mode
}

// DefaultHidden returns the server-wide hidden paths.
func DefaultHidden() []string {
	defaults.Lock()
	defer defaults.Unlock()
	return slices.Clone(defaults.hidden)
}

// CredentialDirs are the user's credential folders and files, relative to
// the home directory; they are never readable by confined processes.
var CredentialDirs = []string{".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
	".git-credentials", ".npmrc", ".pypirc", ".config/gh", ".config/hub", ".cargo/credentials", ".cargo/credentials.toml",
	".terraform.d", ".vault-token", ".password-store"}

func sortedUnique(paths []string) []string {
	out := slices.Clone(paths)
	sort.Strings(out)
	return slices.Compact(out)
}

// writable are the trees commands may write, where Landlock cannot keep
// a path unreadable (it grants whole hierarchies).
func (s *Spec) writable() []string {
	return append([]string{s.Workspace, s.TmpRoot}, s.Write...)
}

// privateNetwork reports whether the process gets a network namespace of
// its own: when the network is off or loopback and no destination is
// listed (listed destinations are reached over the host's network).
func (s *Spec) privateNetwork() bool {
	return (s.Network == NetworkOff || s.Network == NetworkLoopback) && len(s.Connect) == 0
}
