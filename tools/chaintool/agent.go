package chaintool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools"
)

// DefaultAgentParams is the schema of a sub-agent whose chain declares no
// inputSchema: a message, or a conversation of OpenAI chat messages.
var DefaultAgentParams = json.RawMessage(`{"type":"object","properties":{` +
	`"message":{"type":"string","description":"The task or question for the sub-agent, with all the context it needs."},` +
	`"messages":{"type":"array","description":"Alternatively, a conversation of chat messages ({role, content}).",` +
	`"items":{"type":"object","properties":{"role":{"type":"string"},"content":{"type":"string"}},"required":["role","content"]}}}}`)

// agentTool is a sub-agent: another agent chain called as a tool.
type agentTool struct {
	p     *Provider
	spec  tools.Spec
	info  tools.Info
	name  string // the sub-agent's display name
	binds []binding
}

// agentTool fills the tool's name, description and parameters from the
// target chain, unless the spec gives them.
func (p *Provider) agentTool(spec tools.Spec, binds []binding, desc tools.ChainDesc, known bool) (tools.Tool, error) {
	display := desc.Name
	if display == "" {
		display = spec.TargetID
	}
	name := spec.Name
	if name == "" {
		name = FunctionName(desc.Name)
		if name == "" {
			name = FunctionName(spec.TargetID)
		}
	}
	description := spec.Description
	if description == "" {
		description = desc.Description
	}
	if description == "" {
		description = fmt.Sprintf("Delegates a task to the %s agent and returns its answer.", display)
	}
	if !known {
		description += " (Its chain is not deployed yet.)"
	}
	params := spec.Parameters
	if len(params) == 0 {
		params = desc.InputSchema
	}
	if len(params) == 0 {
		params = DefaultAgentParams
	}
	params, err := hideBound(params, binds)
	if err != nil {
		return nil, err
	}
	return &agentTool{p: p, spec: spec, name: display, binds: binds,
		info: tools.Info{Name: name, Description: description, Parameters: params}}, nil
}

func (t *agentTool) Info() tools.Info { return t.info }

func (t *agentTool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	ci := tools.CallFrom(ctx)
	runID := "sub-" + randomHex()
	if cp := tools.ChainResumeFrom(ctx); cp != nil && cp.RunID != "" {
		// The sub-agent paused: it goes on under its own id.
		runID = cp.RunID
	}
	desc, _ := t.p.o.Invoker.Describe(t.spec.TargetID)
	sink := &events.Nested{Parent: runSink(ci), RunID: runID, Name: t.name, Description: desc.Description,
		ParentToolCallID: toolCallID(ci)}
	md := childMetadata(ci, runID)
	// The sub-agent's run span is the child of this call's execute_tool
	// span; its chain's nodes and its agent's LLM calls nest in it.
	ctx, span := telemetry.StartRun(ctx, telemetry.RunInfo{Agent: t.name, ChainID: t.spec.TargetID, RunID: runID,
		ParentRunID: md["parentRunId"], Source: "subagent"})
	res, err := t.p.invoke(ctx, raw, t.spec.TargetID, t.binds, true, func(data string) tools.ChainRequest {
		return tools.ChainRequest{Data: data, Metadata: md, Sink: sink, Steps: runSink(ci), ToolCallID: toolCallID(ci)}
	})
	if span.Active() {
		span.End(subagentEnd(res, err))
	}
	return res, err
}

// subagentEnd is how a sub-agent's run ended, for its span.
func subagentEnd(res tools.Result, err error) telemetry.RunEnd {
	switch {
	case err != nil:
		return telemetry.RunEnd{Outcome: "error", ErrorType: tools.KindName(err), Message: err.Error()}
	case res.IsError:
		return telemetry.RunEnd{Outcome: "error", ErrorType: "_OTHER", Message: res.Text}
	}
	return telemetry.RunEnd{Outcome: "success"}
}

// FunctionName makes s a valid function name for the model: letters,
// digits, _ and -, at most 64 characters. Other characters become _; a
// name with nothing left (only CJK, say) becomes "". A name that had to be
// shortened or changed keeps a short hash of the original, so different
// names stay different.
func FunctionName(s string) string {
	var b strings.Builder
	changed := false
	lastUnderscore := false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
			lastUnderscore = false
		case r == '_' || r == ' ':
			if r == ' ' {
				changed = true
			}
			if !lastUnderscore {
				b.WriteByte('_')
				lastUnderscore = true
			}
		default:
			changed = true
			if !lastUnderscore {
				b.WriteByte('_')
				lastUnderscore = true
			}
		}
	}
	name := strings.Trim(b.String(), "_")
	if strings.Trim(name, "-") == "" {
		return ""
	}
	if changed && name != strings.ReplaceAll(strings.TrimSpace(s), " ", "_") {
		h := fnv.New32a()
		h.Write([]byte(s))
		suffix := fmt.Sprintf("_%x", h.Sum32())[:7]
		if len(name) > 64-len(suffix) {
			name = name[:64-len(suffix)]
		}
		return name + suffix
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
