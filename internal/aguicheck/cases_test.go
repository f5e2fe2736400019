package aguicheck

import "slices"

// ruleCase is one stream and what both checkers must say about it. The same
// table drives the Go checker's tests (rules_test.go) and the differential
// test against the real client (differential_test.go).
type ruleCase struct {
	name   string
	events [][]byte
	opts   Options
	// want lists the expected violations in order, each as a substring of
	// its Error(); empty means the stream must pass.
	want []string
	// onlyGo, when set, says why the real client accepts a stream the Go
	// checker rejects (ruleagent's contract is stricter than AG-UI). The
	// differential test then asserts exactly that disagreement.
	onlyGo string
}

// Events are written as JSON text so that field order, nulls and numbers are
// exactly what the case says.
const (
	runStarted  = `{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}`
	runFinished = `{"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`
	runError    = `{"type":"RUN_ERROR","message":"boom"}`
)

// stream is the events as given.
func stream(events ...string) [][]byte {
	out := make([][]byte, len(events))
	for i, e := range events {
		out[i] = []byte(e)
	}
	return out
}

// run wraps body in RUN_STARTED and RUN_FINISHED.
func run(body ...string) [][]byte {
	return stream(slices.Concat([]string{runStarted}, body, []string{runFinished})...)
}

// Why the client accepts what ruleagent's contract forbids.
const (
	contractOneRun = "AG-UI allows several runs in one stream; a ruleagent stream is exactly one run"
	contractEnds   = "the client accepts a stream that stops without a terminal event; ruleagent streams always end with one"
)

// allCases gathers every table.
func allCases() []ruleCase {
	return slices.Concat(runCases, schemaCases, streamCases, subagentCases, chunkCases)
}

var runCases = []ruleCase{
	{name: "minimal run", events: run()},
	{name: "RUN_ERROR may be the only event", events: stream(runError)},
	{name: "RUN_ERROR ends a run", events: stream(runStarted, `{"type":"CUSTOM","name":"n","value":1}`, runError)},
	{
		name:   "first event must be RUN_STARTED",
		events: stream(`{"type":"CUSTOM","name":"n","value":1}`, runFinished),
		want:   []string{"event 0 (CUSTOM): First event must be 'RUN_STARTED'"},
	},
	{
		name:   "nothing after RUN_ERROR",
		events: stream(runStarted, runError, `{"type":"CUSTOM","name":"n","value":1}`),
		want: []string{
			"event 2 (CUSTOM): Cannot send event type 'CUSTOM': The run has already errored with 'RUN_ERROR'.",
			"event 2 (CUSTOM): event after the terminal event 1 (RUN_ERROR)",
		},
	},
	{
		name:   "nothing but a new run after RUN_FINISHED",
		events: stream(runStarted, runFinished, `{"type":"CUSTOM","name":"n","value":1}`),
		want: []string{
			"event 2 (CUSTOM): Cannot send event type 'CUSTOM': The run has already finished with 'RUN_FINISHED'.",
			"event 2 (CUSTOM): event after the terminal event 1 (RUN_FINISHED)",
		},
	},
	{
		name:   "no RUN_STARTED while a run is active",
		events: stream(runStarted, runStarted, runFinished),
		want:   []string{"event 1 (RUN_STARTED): Cannot send 'RUN_STARTED' while a run is still active."},
	},
	{
		name:   "second run after RUN_FINISHED",
		events: stream(runStarted, runFinished, runStarted, runFinished),
		want:   []string{"event 2 (RUN_STARTED): event after the terminal event 1 (RUN_FINISHED)"},
		onlyGo: contractOneRun,
	},
	{
		name:   "second run after RUN_ERROR",
		events: stream(runStarted, runError, runStarted, runFinished),
		want:   []string{"event 2 (RUN_STARTED): event after the terminal event 1 (RUN_ERROR)"},
		onlyGo: contractOneRun + " (and verifyEvents lets a new RUN_STARTED follow RUN_ERROR)",
	},
	{
		name:   "RUN_ERROR after RUN_FINISHED",
		events: stream(runStarted, runFinished, runError),
		want:   []string{"event 2 (RUN_ERROR): event after the terminal event 1 (RUN_FINISHED)"},
		onlyGo: "verifyEvents allows RUN_ERROR after RUN_FINISHED; ruleagent sends one terminal event",
	},
	{
		name:   "the stream must end with a terminal event",
		events: stream(runStarted, `{"type":"CUSTOM","name":"n","value":1}`),
		want:   []string{"event 1 (CUSTOM): the stream ends without a terminal event"},
		onlyGo: contractEnds,
	},
	{
		name:   "an empty stream is not a run",
		events: stream(),
		want:   []string{"stream: the stream is empty"},
		onlyGo: contractEnds,
	},
	{
		name:   "a frame must be a JSON object",
		events: run(`[1]`),
		want:   []string{"event 1 (no type): Invalid event: the frame is not a JSON object."},
	},
	{
		name:   "a frame must carry a type",
		events: run(`{"messageId":"m1"}`),
		want:   []string{"event 1 (no type): Invalid event: the frame carries no event type."},
	},
	{
		name:   "a frame must be JSON",
		events: run(`{"type":"CUSTOM",`),
		want:   []string{"event 1 (no type): not valid JSON"},
	},
	{
		name:   "fragment: no RUN_STARTED or terminal needed",
		events: stream(`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		opts:   Options{Fragment: true},
	},
	{
		name:   "fragment: pairing still applies",
		events: stream(`{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		opts:   Options{Fragment: true},
		want:   []string{"event 0 (TEXT_MESSAGE_END): Cannot send 'TEXT_MESSAGE_END' event: No active text message found with ID 'm1'."},
	},
}
