package tools

import (
	"errors"
	"fmt"

	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// Error kinds. Test them with errors.Is; never match error strings.
var (
	// ErrNotFound: the tool, or the thing it was asked about, does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgs: the arguments do not match the tool's schema or contract.
	ErrInvalidArgs = errors.New("invalid arguments")
	// ErrExecutionFailed: the tool ran and failed.
	ErrExecutionFailed = errors.New("execution failed")
	// ErrPolicyDenied: a policy refused the call (permission denied): a
	// tool policy (its errors are *policy.Denial) or a tool's own policy
	// (bash's command policy, web_fetch's network policy).
	ErrPolicyDenied = policy.ErrDenied
	// ErrLimitExceeded: a limit refused the call (maxToolCalls,
	// toolCallsPerHour); its errors are *limits.Exceeded.
	ErrLimitExceeded = limits.ErrExceeded
	// ErrFileNotFound: a file or directory the call names does not exist.
	ErrFileNotFound = errors.New("file not found")
	// ErrInvalidPath: a path is malformed or escapes the workspace.
	ErrInvalidPath = errors.New("invalid path")
	// ErrTimeout: the call ran out of time.
	ErrTimeout = errors.New("timeout")
	// ErrRepeatedCall: the same call was repeated too often (doom-loop guard).
	ErrRepeatedCall = errors.New("repeated call")
)

// ErrPermissionDenied is another name for ErrPolicyDenied.
var ErrPermissionDenied = ErrPolicyDenied

// Error is a typed tool error. Kind is one of the Err* values above.
type Error struct {
	Kind error
	// Msg explains the failure to the model and the user.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

// Errorf returns an *Error of the given kind.
func Errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of the given kind around err.
func Wrap(kind error, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: err}
}

func (e *Error) Error() string {
	switch {
	case e.Msg == "" && e.Err == nil:
		return e.Kind.Error()
	case e.Msg == "":
		return e.Kind.Error() + ": " + e.Err.Error()
	case e.Err == nil:
		return e.Kind.Error() + ": " + e.Msg
	default:
		return e.Kind.Error() + ": " + e.Msg + ": " + e.Err.Error()
	}
}

// Unwrap lets errors.Is see both the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// KindOf returns the kind of err, or ErrExecutionFailed when err carries none.
func KindOf(err error) error {
	for _, k := range []error{ErrApprovalDenied, ErrRepeatedCall, ErrLimitExceeded, ErrPolicyDenied, ErrInvalidArgs, ErrInvalidPath, ErrFileNotFound, ErrTimeout, ErrNotFound, ErrExecutionFailed} {
		if errors.Is(err, k) {
			return k
		}
	}
	return ErrExecutionFailed
}

// KindName is the short, stable name of an error kind, used in events,
// metrics labels and CLI output.
func KindName(err error) string {
	switch KindOf(err) {
	case ErrApprovalDenied:
		return "approval_denied"
	case ErrPolicyDenied:
		return "permission_denied"
	case ErrLimitExceeded:
		return "limit_exceeded"
	case ErrInvalidArgs:
		return "invalid_args"
	case ErrInvalidPath:
		return "invalid_path"
	case ErrFileNotFound:
		return "file_not_found"
	case ErrTimeout:
		return "timeout"
	case ErrRepeatedCall:
		return "repeated_call"
	case ErrNotFound:
		return "not_found"
	default:
		return "execution_failed"
	}
}
