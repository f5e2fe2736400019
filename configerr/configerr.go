// Package configerr is the one error type of configuration mistakes: every
// parser of chain configuration (an agent node's fields, its tools array,
// each builtin's config, MCP entries, tool policies, LLM settings) returns
// an *Error located by its JSON path, or a List of them. Callers above
// (ruleagent validate, the chains API's 400 answers, the editor) read the
// path with errors.As, never from the message text.
//
// It imports nothing of ruleagent, so that every layer may use it.
package configerr

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConfig is matched by every *Error (errors.Is(err, ErrConfig)).
var ErrConfig = errors.New("invalid configuration")

// Error is one configuration mistake, located by its JSON path relative to
// the object its parser was given, for example `tools[2].config.timeout`.
// An empty Path is that object itself.
type Error struct {
	Path string
	Msg  string
	// Err is the cause, when the mistake was found by another error (a
	// file that does not exist, a JSON decoder's complaint); it is part of
	// the chain errors.Is and errors.As walk.
	Err error
}

// New returns an *Error at path; format and args make its message.
func New(path, format string, args ...any) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error at path whose message is err's text and whose
// cause is err. A nil err is nil.
func Wrap(path string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Path: path, Msg: err.Error(), Err: err}
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Is makes errors.Is(err, ErrConfig) true for configuration errors.
func (e *Error) Is(target error) bool { return target == ErrConfig }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Field is the last key of the path: "timeout" for
// `tools[2].config.timeout`, "deny" for `policy.deny[1]`; "" for the
// object itself.
func (e *Error) Field() string {
	p := e.Path[strings.LastIndexByte(e.Path, '.')+1:]
	if i := strings.IndexByte(p, '['); i >= 0 {
		p = p[:i]
	}
	return p
}

// Join appends key to path: Join("tools[2]", "config") is
// "tools[2].config", Join("tools", "[2]") is "tools[2]".
func Join(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	case strings.HasPrefix(key, "["):
		return path + key
	}
	return path + "." + key
}

// Prefix places err under prefix: an *Error (or each of a List) gets
// prefix in front of its path; any other error becomes an *Error at
// prefix, with err as its cause. A nil err is nil.
func Prefix(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var l List
	if errors.As(err, &l) {
		out := make(List, len(l))
		for i, e := range l {
			out[i] = prefixed(prefix, e)
		}
		return out
	}
	var ce *Error
	if errors.As(err, &ce) {
		return prefixed(prefix, ce)
	}
	return &Error{Path: prefix, Msg: err.Error(), Err: err}
}

func prefixed(prefix string, e *Error) *Error {
	c := *e
	c.Path = Join(prefix, e.Path)
	return &c
}

// List is several configuration mistakes found together, in the order
// found. errors.As(err, &list) gives them all; errors.As(err, &e) with an
// *Error gives the first.
type List []*Error

func (l List) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap lets errors.Is and errors.As see each error of the list.
func (l List) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// All returns the configuration errors err holds: each of a List, or the
// one *Error, or nil when err holds none.
func All(err error) []*Error {
	var l List
	if errors.As(err, &l) {
		return l
	}
	var ce *Error
	if errors.As(err, &ce) {
		return []*Error{ce}
	}
	return nil
}
