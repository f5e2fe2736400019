package main

import (
	"fmt"

	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// mcpTaskStore keeps MCP tasks beside the sessions: in the state file
// under --data, or in the sessions' Redis, so that a client polling a task
// reaches its state on any replica; in memory for memory sessions.
func mcpTaskStore(s sessions.Store) (tasks.Store, error) {
	switch s := s.(type) {
	case *sessions.Bolt:
		return tasks.NewBolt(s.DB())
	case *sessions.Redis:
		c := s.Conn()
		return tasks.NewRedis(c.Client, c.Prefix), nil
	case *sessions.Memory:
		return tasks.NewMemory(), nil
	}
	return nil, fmt.Errorf("mcp tasks: no task store beside a %T session store", s)
}
