package mcptool

import (
	"errors"
	"io/fs"
	"os/exec"
	"time"

	"github.com/ruleagent/ruleagent/internal/wait"
	"github.com/ruleagent/ruleagent/tools"
)

// misconfigured marks a connection failure that no retry can mend: the
// config must change.
type misconfigured struct{ error }

func (m misconfigured) Unwrap() error { return m.error }

// unfixable reports whether a failed first connection means the entry is
// wrong, rather than the server being down for now: a program that does not
// exist or may not be run, or a transport the server does not speak.
func unfixable(err error) bool {
	var m misconfigured
	return errors.As(err, &m) || errors.Is(err, exec.ErrNotFound) ||
		errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
}

// startDegraded is Build's path for a server that could not be reached when
// the agent started, and whose entry is not required: the entry starts with
// no tools, and connectLater keeps trying.
func (c *conn) startDegraded(err error) {
	c.mu.Lock()
	c.failures, c.retryAt, c.lastErr = 1, time.Now().Add(retryDelay(1)), err
	c.mu.Unlock()
	c.log.Warn("MCP server: unreachable as the agent starts; going on without its tools, and trying again in the background",
		"server", c.name, "at", c.t.describe(), "err", err)
	c.wg.Add(1)
	go c.connectLater()
}

// connectLater connects in the background, with the reconnection backoff,
// until it succeeds or the conn is closed, and then hands the server's tools
// to the agent's tool set.
func (c *conn) connectLater() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		wait := time.Until(c.retryAt)
		c.mu.Unlock()
		if !c.sleep(wait) {
			return
		}
		s, err := c.session(c.base)
		if err != nil {
			if c.base.Err() != nil {
				return
			}
			continue
		}
		// The tool set may still be being built (another entry taking its
		// connect timeout): the tools are handed over once it is.
		for errors.Is(c.tools.update(s.listed), tools.ErrNotBuilt) {
			if !c.sleep(50 * time.Millisecond) {
				return
			}
		}
		return
	}
}

// sleep waits for d, and reports false if the conn was closed meanwhile.
func (c *conn) sleep(d time.Duration) bool { return wait.For(c.base, d) == nil }
