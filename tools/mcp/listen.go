package mcptool

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/internal/wait"
)

// listen opens the subscriptions/listen stream of a 2026-07-28 session
// whose server announces tool list changes, and keeps it open for the
// session's life: when the stream ends (the server restarted, a proxy cut
// it), the tools are listed again, since a change may have been missed,
// and the stream reopened, waiting longer after each failure.
func (c *conn) listen(s *session, life context.Context) {
	caps := s.client.GetServerCapabilities()
	if !s.modern || caps.Tools == nil || !caps.Tools.ListChanged {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		delay := firstRetryDelay
		for {
			err := s.client.Listen(life, mcp.SubscriptionFilter{ToolsListChanged: true})
			if life.Err() != nil {
				return
			}
			if errors.Is(err, mcp.ErrMethodNotFound) {
				c.log.Debug("MCP server: no subscriptions/listen; tool list changes will not be followed", "server", c.name)
				return
			}
			c.log.Debug("MCP server: the subscriptions/listen stream ended", "server", c.name, "err", err)
			if wait.For(life, delay) != nil {
				return
			}
			delay = min(delay*2, maxRetryDelay)
			c.relistSoon()
		}
	}()
}
