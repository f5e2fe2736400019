package sandbox

import "os"

// A confined process is started by re-executing the running binary (the
// ruleagent server, or a test binary): these variables make it run the
// helper, or confine itself and execute a program, instead of its main
// function. The check runs in an init function so that it happens before
// any other package's start-up code.
func init() {
	switch {
	case os.Getenv(helperEnv) == "1":
		runHelper()
	case os.Getenv(execEnv) != "":
		runExec()
	case os.Getenv(nsProbeEnv) == "1":
		runNamespaceProbe()
	}
}
