package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func runVersion(_ context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) error {
	v := buildVersion()
	rulegoVersion := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/rulego/rulego" {
				rulegoVersion = d.Version
			}
		}
	}
	fmt.Fprintf(stdout, "ruleagent %s (rulego %s, %s %s/%s)\n", v, rulegoVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(stdout, "sandbox: %s\n", sandbox.Summary())
	return nil
}

// buildVersion is the binary's version: set at build time, else the
// module's, else "dev".
func buildVersion() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "" {
		v = bi.Main.Version
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	return v
}
