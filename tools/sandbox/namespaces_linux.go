package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Mount and network namespaces. Root creates them directly. Another user
// creates them inside a user namespace of its own, where the kernel allows
// unprivileged user namespaces: the child maps its own user and group into
// the new user namespace itself, right after it starts and before it makes
// itself non-dumpable. (The parent cannot do it for a ruleagent server:
// the server is non-dumpable, so its children's /proc files, uid_map
// among them, belong to root until they execute, and the write fails.)

// userNSEnv carries "uid:gid" (the user and group to map) to a child
// started in a new user namespace.
const userNSEnv = "RULEAGENT_SANDBOX_USERNS"

// probeEnv makes the re-executed binary try the namespaces and exit.
const nsProbeEnv = "RULEAGENT_SANDBOX_NSPROBE"

// inNamespaces makes cmd start in new mount (and, with network, network)
// namespaces, inside a user namespace of its own when this process is not
// root. cmd must re-execute this binary (its init maps the user).
func inNamespaces(cmd *exec.Cmd, network bool) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	attr := cmd.SysProcAttr
	attr.Cloneflags |= unix.CLONE_NEWNS
	if network {
		attr.Cloneflags |= unix.CLONE_NEWNET
	}
	if geteuid() == 0 {
		return
	}
	// The capabilities it needs to set up its namespaces (the confined
	// threads drop them all before starting anything).
	attr.Cloneflags |= unix.CLONE_NEWUSER
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, fmt.Sprintf("%s=%d:%d", userNSEnv, os.Getuid(), os.Getgid()))
}

// enterUserNamespace writes this process's user and group maps when it was
// started in a new user namespace (userNSEnv set). It must run before
// anything makes the process non-dumpable.
func enterUserNamespace() error {
	ids := os.Getenv(userNSEnv)
	if ids == "" {
		return nil
	}
	os.Unsetenv(userNSEnv)
	uid, gid, ok := strings.Cut(ids, ":")
	if !ok {
		return fmt.Errorf("bad %s %q", userNSEnv, ids)
	}
	for _, w := range []struct{ file, text string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/uid_map", uid + " " + uid + " 1\n"},
		{"/proc/self/gid_map", gid + " " + gid + " 1\n"},
	} {
		if err := os.WriteFile(w.file, []byte(w.text), 0); err != nil {
			return fmt.Errorf("user namespace: %w", err)
		}
	}
	return nil
}

// runNamespaceProbe is the probe's child: it sets up what the helper sets
// up (its user, a private mount, a mount of its own, loopback) and exits
// 0, or prints what failed and exits 1.
func runNamespaceProbe() {
	fail := func(step string, err error) {
		fmt.Fprintf(os.Stderr, "%s: %v", step, err)
		os.Exit(1)
	}
	if err := enterUserNamespace(); err != nil {
		fail("mapping the user", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fail("making the mounts private", err)
	}
	if err := unix.Mount("tmpfs", os.TempDir(), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k"); err != nil {
		fail("mounting a file system", err)
	}
	if err := loopbackUp(); err != nil {
		fail("bringing up loopback", err)
	}
	os.Exit(0)
}

// namespaceProbe tries the namespaces in a child (this binary,
// re-executed) and says why they cannot be used; tests replace it.
var namespaceProbe = func() error {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"ruleagent-sandbox-probe"}
	cmd.Env = []string{nsProbeEnv + "=1"}
	inNamespaces(cmd, true)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("creating the namespaces: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				return errors.New(msg)
			}
			return err
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("the namespace probe did not finish in 10s")
	}
}

// procSys is where the kernel's settings are read, and geteuid who this
// process is; tests replace them.
var (
	procSys = "/proc/sys"
	geteuid = os.Geteuid
)

// namespacesUnavailable explains a failed probe, naming the system
// setting that forbids unprivileged user namespaces when one does.
func namespacesUnavailable(err error) string {
	if geteuid() == 0 {
		return fmt.Sprintf("cannot create mount and network namespaces even as root (%v; a container without CAP_SYS_ADMIN?)", err)
	}
	setting := func(name string) string {
		b, err := os.ReadFile(filepath.Join(procSys, strings.ReplaceAll(name, ".", "/")))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	switch {
	case setting("kernel.unprivileged_userns_clone") == "0":
		return "this system forbids unprivileged user namespaces (kernel.unprivileged_userns_clone=0)"
	case setting("user.max_user_namespaces") == "0":
		return "this system forbids user namespaces (user.max_user_namespaces=0)"
	case setting("kernel.apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) and ruleagent has no AppArmor profile allowing them"
	}
	if n, perr := strconv.Atoi(setting("user.max_user_namespaces")); perr == nil && n > 0 && errors.Is(err, unix.ENOSPC) {
		return fmt.Sprintf("the user namespace limit is reached (user.max_user_namespaces=%d)", n)
	}
	return fmt.Sprintf("user namespaces could not be set up (%v)", err)
}
