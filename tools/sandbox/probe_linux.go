package sandbox

import (
	"fmt"
	"strings"
	"sync"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

var probed = sync.OnceValue(describeSystem)

// describeSystem finds out what confinement this system gives: the
// Landlock ABI, and whether the namespaces can be created (tried once, in
// a child).
func describeSystem() Status {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		why := "the kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK and landlock in the lsm= boot list)"
		if err != nil {
			why += ": " + err.Error()
		}
		return Status{Reason: why}
	}
	nsErr := namespaceProbe()
	st := Status{Available: true, LandlockABI: abi, Namespaces: nsErr == nil}
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
	st.Mechanism = fmt.Sprintf("Landlock ABI %d (%s) + seccomp (sockets)", abi, strings.Join(parts, ", "))
	if st.Namespaces {
		st.Mechanism += " + mount and network namespaces"
		if geteuid() != 0 {
			st.Mechanism += " (in a user namespace)"
		}
	} else {
		gaps = append(gaps, "no namespaces: "+namespacesUnavailable(nsErr)+
			"; so a program written into the workspace can be run through the dynamic loader, and paths inside the workspace (edit backups, denyArgs paths) are not hidden")
	}
	st.Reason = strings.Join(gaps, "; ")
	return st
}

func probe() Status { return probed() }
