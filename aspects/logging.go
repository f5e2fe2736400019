package aspects

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// Logging logs runs, LLM calls and tool calls with log/slog. Run and tool
// events log at Info, LLM calls at Debug.
type Logging struct {
	Everywhere
	Logger *slog.Logger
	// Level is the level of run and tool records (LLM calls log one below).
	Level slog.Level
}

// Order places logging outside most aspects, so it sees their effects.
func (l *Logging) Order() int { return 200 }

func (l *Logging) log() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

func attrs(p *Point) []any {
	return []any{"chain", p.ChainID, "node", p.NodeID, "run", p.RunID, "thread", p.ThreadID}
}

// OnRunStart implements RunStart.
func (l *Logging) OnRunStart(ctx context.Context, p *Point, in *RunInput) error {
	l.log().Log(ctx, l.Level, "agent run started", append(attrs(p), "messages", len(in.Messages))...)
	return nil
}

// OnCompleted implements Completed.
func (l *Logging) OnCompleted(ctx context.Context, p *Point, out *RunOutput, err error) {
	if err != nil {
		l.log().Log(ctx, slog.LevelWarn, "agent run failed", append(attrs(p), "error", err)...)
		return
	}
	if out == nil {
		return
	}
	l.log().Log(ctx, l.Level, "agent run finished", append(attrs(p),
		"steps", out.Steps, "toolCalls", out.ToolCalls, "truncated", out.Truncated,
		"promptTokens", out.Usage.PromptTokens, "completionTokens", out.Usage.CompletionTokens,
		"duration", out.Duration)...)
}

// AfterLLM implements AfterLLM.
func (l *Logging) AfterLLM(ctx context.Context, p *Point, r *LLMResponse) error {
	l.log().Log(ctx, l.Level-4, "llm answered", append(attrs(p), "step", p.Step, "model", r.Model,
		"finish", r.FinishReason, "toolCalls", len(r.ToolCalls), "chars", len(r.Content))...)
	return nil
}

// AfterToolCall implements ToolCallAfter.
func (l *Logging) AfterToolCall(ctx context.Context, p *Point, c *ToolCall, r *ToolResult) error {
	level := l.Level
	if r.IsError {
		level = slog.LevelWarn
	}
	l.log().Log(ctx, level, "tool call", append(attrs(p), "tool", c.Name, "id", c.ID, "duration", r.Duration,
		"error", r.IsError, "kind", r.ErrKind, "bytes", len(r.Content))...)
	return nil
}

// LoggingConfig is the JSON config of the "logging" aspect.
type LoggingConfig struct {
	// Level is debug, info, warn or error (default info).
	Level string `json:"level"`
}

func newLogging(raw json.RawMessage) (Aspect, error) {
	var c LoggingConfig
	if len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("logging aspect config: %w", err)
		}
	}
	l := &Logging{Level: slog.LevelInfo}
	if c.Level != "" {
		if err := l.Level.UnmarshalText([]byte(c.Level)); err != nil {
			return nil, fmt.Errorf("logging aspect config: level: %w", err)
		}
	}
	return l, nil
}
