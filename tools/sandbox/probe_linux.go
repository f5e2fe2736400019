package sandbox

import (
	"fmt"
	"os"
	"strings"
	"sync"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
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
	} else {
		gaps = append(gaps, "no namespaces (not root): the workspace stays executable through the dynamic loader, paths inside it are not hidden, UDP is not blocked")
	}
	st.Reason = strings.Join(gaps, "; ")
	return st
})

func probe() Status { return probed() }

// canUseNamespaces reports whether the helper may be started in new mount
// and network namespaces: it needs CAP_SYS_ADMIN, which root has.
func canUseNamespaces() bool { return os.Geteuid() == 0 }
