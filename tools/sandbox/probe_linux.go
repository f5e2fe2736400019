package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

var probed = sync.OnceValue(func() Status {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		why := "the kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK and landlock in the lsm= boot list)"
		if err != nil {
			why += ": " + err.Error()
		}
		return Status{Reason: why}
	}
	st := Status{Available: true, LandlockABI: abi, Namespaces: canUseNamespaces()}
	parts := []string{"exec", "filesystem"}
	var gaps []string
	if abi >= 4 {
		parts = append(parts, "TCP")
	} else {
		gaps = append(gaps, "Landlock ABI < 4 cannot restrict TCP")
	}
	if abi >= 6 {
		parts = append(parts, "signals", "abstract sockets")
	}
	st.Mechanism = fmt.Sprintf("Landlock ABI %d (%s)", abi, strings.Join(parts, ", "))
	if st.Namespaces {
		st.Mechanism += " + mount and network namespaces"
		if os.Geteuid() != 0 {
			st.Mechanism += " (in a user namespace)"
		}
	} else {
		gaps = append(gaps, "no namespaces (not root, and user namespaces are not allowed): the workspace stays executable through the dynamic loader, paths inside it are not hidden, UDP is not blocked")
	}
	st.Reason = strings.Join(gaps, "; ")
	return st
})

func probe() Status { return probed() }

// canUseNamespaces reports whether the helper may be started in new mount
// and network namespaces: as root directly; otherwise inside a new user
// namespace, where the system allows unprivileged ones (tried once with
// /bin/true).
func canUseNamespaces() bool {
	if os.Geteuid() == 0 {
		return true
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	inUserNamespace(cmd.SysProcAttr)
	cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWNS | unix.CLONE_NEWNET
	return cmd.Run() == nil
}

// inUserNamespace makes a process started as a user other than root run
// in a user namespace of its own, as the same user, with the
// capabilities it needs to set up its mount and network namespaces (the
// confined threads drop them all before starting anything).
func inUserNamespace(attr *syscall.SysProcAttr) {
	if os.Geteuid() == 0 {
		return
	}
	attr.Cloneflags |= unix.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
}
