package aguicheck

import "fmt"

// Stage names which layer of the AG-UI client a rule comes from, so a reader
// can tell a wire-shape problem from an ordering problem, and so the
// differential tests can say which client stage must agree.
type Stage string

const (
	// StageFrame: the SSE transport's own checks (the frame is a JSON object
	// with a non-empty string type).
	StageFrame Stage = "frame"
	// StageCompat: a deprecated pre-1.0 shape the client converts with a warning.
	StageCompat Stage = "compat"
	// StageSchema: the zod schemas applied by enforceEvents, including the
	// fields and events it strips or drops with a warning.
	StageSchema Stage = "schema"
	// StageChunks: expansion of *_CHUNK events (transformChunks).
	StageChunks Stage = "chunks"
	// StageVerify: the ordering and pairing rules of verifyEvents.
	StageVerify Stage = "verify"
	// StageContract: ruleagent's own rule, stricter than AG-UI: exactly one
	// terminal event, and it is the last.
	StageContract Stage = "contract"
)

// Violation is one broken rule. Index is the 0-based position of the event in
// the stream (-1 for a property of the whole stream, such as being empty);
// Type is that event's type as sent, "" if it has none.
type Violation struct {
	Index   int
	Type    string
	Stage   Stage
	Message string
}

func (v *Violation) Error() string {
	if v.Index < 0 {
		return fmt.Sprintf("stream: %s", v.Message)
	}
	typ := v.Type
	if typ == "" {
		typ = "no type"
	}
	return fmt.Sprintf("event %d (%s): %s", v.Index, typ, v.Message)
}
