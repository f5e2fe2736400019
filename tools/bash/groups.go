package bash

import (
	"path"
	"regexp"
	"strings"
)

// Default deny groups. Each is on unless the config lists it in
// allowGroups. A group is a set of patterns (data, matched like config deny
// patterns) plus structural checks implemented in rules.go and
// structure.go, which look at how commands are combined rather than at one
// command.
const (
	groupDestructive  = "destructive"
	groupDisk         = "disk"
	groupPower        = "power"
	groupForkBomb     = "forkbomb"
	groupDownloadExec = "download_exec"
	groupReverseShell = "reverse_shell"
	groupEnvRead      = "env_read"
	groupPrivilege    = "privilege"
	groupDetach       = "detach"
)

type denyGroup struct {
	name string
	// why is shown to the model after the rule name.
	why      string
	patterns []pattern
}

var denyGroups = []denyGroup{
	{
		name: groupDestructive,
		why:  "destroys files or file systems",
		patterns: mustPatterns(
			"rm -rf", "rm --no-preserve-root", "rm -r /", "rm -r ~",
			"find -delete", "shred", "wipe", "srm", "mkfs*", "mke2fs", "mkdosfs", "mkntfs", "wipefs",
			"dd of=/dev/*", "chmod -R /", "chown -R /", "chgrp -R /",
		),
	},
	{
		name: groupDisk,
		why:  "changes disks, partitions or mounts",
		patterns: mustPatterns(
			"fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted", "partprobe", "mkswap",
			"swapon", "swapoff", "blkdiscard", "hdparm", "mdadm", "cryptsetup", "pvremove", "vgremove",
			"lvremove", "pvcreate", "vgcreate", "lvcreate", "zpool", "losetup", "mount", "umount",
			"diskutil", "diskpart", "format",
		),
	},
	{
		name: groupPower,
		why:  "shuts down or restarts the machine",
		patterns: mustPatterns(
			"shutdown", "reboot", "halt", "poweroff", "kexec", "init 0", "init 6", "telinit 0", "telinit 6",
			"systemctl poweroff", "systemctl reboot", "systemctl halt", "systemctl suspend",
			"systemctl hibernate", "systemctl hybrid-sleep", "systemctl kexec", "systemctl soft-reboot",
			"systemctl rescue", "systemctl emergency", "loginctl poweroff", "loginctl reboot",
			"loginctl suspend", "loginctl hibernate",
		),
	},
	{name: groupForkBomb, why: "a function that starts copies of itself without end"},
	{name: groupDownloadExec, why: "runs code downloaded from the network"},
	{
		name: groupReverseShell,
		why:  "connects a shell to the network",
		patterns: mustPatterns(
			"socat", "nc -e", "nc -c", "ncat -e", "ncat -c", "ncat --lua-exec", "netcat -e", "netcat -c",
			"nc.traditional -e", "nc.traditional -c", "nc.openbsd -e", "nc.openbsd -c", "cryptcat",
		),
	},
	{
		name:     groupEnvRead,
		why:      "reads the environment, where secrets live",
		patterns: mustPatterns("printenv"),
	},
	{
		name:     groupPrivilege,
		why:      "escalates privileges",
		patterns: mustPatterns("sudo", "su", "doas", "pkexec", "runuser", "sudoedit", "nsenter", "unshare", "capsh", "setcap"),
	},
	{
		name: groupDetach,
		why:  "starts a process outside the call's process group, beyond the reach of its timeout",
		patterns: mustPatterns(
			"setsid", "systemd-run", "at", "batch", "crontab", "daemonize", "start-stop-daemon", "screen", "tmux", "dtach",
		),
	},
}

func groupNames() []string {
	names := make([]string, len(denyGroups))
	for i, g := range denyGroups {
		names[i] = g.name
	}
	return names
}

func groupWhy(name string) string {
	for _, g := range denyGroups {
		if g.name == name {
			return g.why
		}
	}
	return ""
}

// Kinds of programs the structural rules reason about.
var (
	shellNames = setOf("sh", "bash", "rbash", "dash", "ash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "lksh",
		"posh", "yash", "fish", "csh", "tcsh", "nu", "elvish", "xonsh")
	interpreterGlobs = []string{"python*", "pypy*", "perl*", "ruby*", "irb", "node", "nodejs", "deno", "bun",
		"php*", "lua*", "luajit", "tclsh*", "wish*", "rscript", "pwsh", "powershell", "osascript", "jshell", "expect"}
	downloaderNames = setOf("curl", "wget", "wget2", "fetch", "aria2c", "axel", "http", "https", "xh", "curlie",
		"lwp-download", "lwp-request", "get", "tftp", "ftp")
	netToolNames = setOf("nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "cryptcat", "socat", "telnet",
		"openssl", "gnutls-cli")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func isShell(base string) bool { return shellNames[base] }

func isInterpreter(base string) bool {
	for _, g := range interpreterGlobs {
		if ok, _ := path.Match(g, base); ok {
			return true
		}
	}
	return false
}

// rawDiskDevice matches device files that hold whole disks or raw memory;
// writing to one destroys data below the file system.
var rawDiskDevice = regexp.MustCompile(`^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|md[0-9]|dm-[0-9]|loop[0-9]|sr[0-9]|mapper/|disk/|mem$|kmem$|port$)`)

// namesRawDisk reports whether a literal value names a raw disk device,
// also as the value of an of=/dev/sda style operand.
func namesRawDisk(v string) bool {
	if _, after, ok := strings.Cut(v, "="); ok {
		v = after
	}
	if !strings.HasPrefix(v, "/") {
		return false
	}
	return rawDiskDevice.MatchString(path.Clean(v))
}
