package tools

import (
	"encoding/json"

	"github.com/ruleagent/ruleagent/telemetry"
)

// endSpan ends a call's execute_tool span with its outcome, and with its
// arguments and result when the operator captures content (both scrubbed
// with the run's scrubber; the result as the model reads it).
func endSpan(span telemetry.Tool, r *Run, args json.RawMessage, out *Outcome, truncated bool) {
	if !span.Active() {
		return
	}
	e := telemetry.ToolEnd{IsError: out.IsError, ErrorType: out.Kind, Truncated: truncated}
	if out.IsError {
		e.Message = out.Content
	}
	if span.CaptureContent() {
		e.Args, e.Result = string(args), out.Content
		if r.Scrubber != nil {
			e.Args = r.Scrubber.Scrub(e.Args)
		}
	}
	span.End(e)
}
