package aspects

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrRefused wraps errors returned by aspects, so callers can tell an
// aspect's refusal from other failures (errors.Is(err, ErrRefused)).
var ErrRefused = errors.New("refused by aspect")

// Manager holds the aspects of one agent, sorted and grouped by point. It is
// immutable once built and safe for concurrent use.
type Manager struct {
	all        []Aspect
	runStart   []RunStart
	before     []Before
	around     []Around
	after      []After
	completed  []Completed
	beforeLLM  []BeforeLLM
	afterLLM   []AfterLLM
	chunk      []StreamChunk
	toolBefore []ToolCallBefore
	toolAfter  []ToolCallAfter
}

// NewManager sorts aspects by Order (stably) and groups them by the points
// they implement. A value that implements no point interface is an error.
func NewManager(as ...Aspect) (*Manager, error) {
	sorted := slices.Clone(as)
	// cmp.Compare, not a.Order()-b.Order(): orders near the ends of int's
	// range would overflow.
	slices.SortStableFunc(sorted, func(a, b Aspect) int { return cmp.Compare(a.Order(), b.Order()) })
	m := &Manager{all: sorted}
	for _, a := range sorted {
		n := 0
		if x, ok := a.(RunStart); ok {
			m.runStart = append(m.runStart, x)
			n++
		}
		if x, ok := a.(Before); ok {
			m.before = append(m.before, x)
			n++
		}
		if x, ok := a.(Around); ok {
			m.around = append(m.around, x)
			n++
		}
		if x, ok := a.(After); ok {
			m.after = append(m.after, x)
			n++
		}
		if x, ok := a.(Completed); ok {
			m.completed = append(m.completed, x)
			n++
		}
		if x, ok := a.(BeforeLLM); ok {
			m.beforeLLM = append(m.beforeLLM, x)
			n++
		}
		if x, ok := a.(AfterLLM); ok {
			m.afterLLM = append(m.afterLLM, x)
			n++
		}
		if x, ok := a.(StreamChunk); ok {
			m.chunk = append(m.chunk, x)
			n++
		}
		if x, ok := a.(ToolCallBefore); ok {
			m.toolBefore = append(m.toolBefore, x)
			n++
		}
		if x, ok := a.(ToolCallAfter); ok {
			m.toolAfter = append(m.toolAfter, x)
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("aspects: %T implements no interception point", a)
		}
	}
	return m, nil
}

// Aspects returns the aspects in order.
func (m *Manager) Aspects() []Aspect {
	if m == nil {
		return nil
	}
	return slices.Clone(m.all)
}

func refused(a Aspect, err error) error {
	return fmt.Errorf("%w: %T: %w", ErrRefused, a, err)
}

// RunStart invokes the RunStart aspects.
func (m *Manager) RunStart(ctx context.Context, p *Point, in *RunInput) error {
	if m == nil {
		return nil
	}
	for _, a := range m.runStart {
		if a.PointCut(ctx, p) {
			if err := a.OnRunStart(ctx, p, in); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}

// Before invokes the Before aspects.
func (m *Manager) Before(ctx context.Context, p *Point, in *RunInput) error {
	if m == nil {
		return nil
	}
	for _, a := range m.before {
		if a.PointCut(ctx, p) {
			if err := a.Before(ctx, p, in); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}

// Around composes the Around aspects around core, the lowest Order outermost.
func (m *Manager) Around(ctx context.Context, p *Point, in *RunInput, core RunFunc) (*RunOutput, error) {
	if m == nil || len(m.around) == 0 {
		return core(ctx, in)
	}
	next := core
	for i := len(m.around) - 1; i >= 0; i-- {
		a, inner := m.around[i], next
		next = func(ctx context.Context, in *RunInput) (*RunOutput, error) {
			if !a.PointCut(ctx, p) {
				return inner(ctx, in)
			}
			// An error the aspect makes itself is a refusal; one it passes
			// on from the inner run, as it is or wrapped (%w), keeps its
			// own identity.
			var innerErr error
			out, err := a.Around(ctx, p, in, func(ctx context.Context, in *RunInput) (*RunOutput, error) {
				o, e := inner(ctx, in)
				innerErr = e
				return o, e
			})
			if err != nil && (innerErr == nil || !errors.Is(err, innerErr)) {
				err = refused(a, err)
			}
			return out, err
		}
	}
	return next(ctx, in)
}

// After invokes the After aspects.
func (m *Manager) After(ctx context.Context, p *Point, out *RunOutput) error {
	if m == nil {
		return nil
	}
	for _, a := range m.after {
		if a.PointCut(ctx, p) {
			if err := a.After(ctx, p, out); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}

// Completed invokes the Completed aspects. A panicking aspect does not stop
// the others.
func (m *Manager) Completed(ctx context.Context, p *Point, out *RunOutput, err error) {
	if m == nil {
		return
	}
	for _, a := range m.completed {
		func() {
			defer func() { _ = recover() }()
			if a.PointCut(ctx, p) {
				a.OnCompleted(ctx, p, out, err)
			}
		}()
	}
}

// HasCompleted reports whether any Completed aspect is configured.
func (m *Manager) HasCompleted() bool { return m != nil && len(m.completed) > 0 }

// HasBeforeLLM reports whether any BeforeLLM aspect is configured, so the
// engine can skip building what only they read.
func (m *Manager) HasBeforeLLM() bool { return m != nil && len(m.beforeLLM) > 0 }

// BeforeLLM invokes the BeforeLLM aspects.
func (m *Manager) BeforeLLM(ctx context.Context, p *Point, req *LLMRequest) error {
	if m == nil {
		return nil
	}
	for _, a := range m.beforeLLM {
		if a.PointCut(ctx, p) {
			if err := a.BeforeLLM(ctx, p, req); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}

// AfterLLM invokes the AfterLLM aspects.
func (m *Manager) AfterLLM(ctx context.Context, p *Point, resp *LLMResponse) error {
	if m == nil {
		return nil
	}
	for _, a := range m.afterLLM {
		if a.PointCut(ctx, p) {
			if err := a.AfterLLM(ctx, p, resp); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}

// HasChunk reports whether any StreamChunk aspect is configured, so the
// engine can skip building chunks otherwise.
func (m *Manager) HasChunk() bool { return m != nil && len(m.chunk) > 0 }

// Chunk invokes the StreamChunk aspects.
func (m *Manager) Chunk(ctx context.Context, p *Point, c *Chunk) error {
	if m == nil {
		return nil
	}
	for _, a := range m.chunk {
		if a.PointCut(ctx, p) {
			if err := a.OnChunk(ctx, p, c); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}

// HasToolPoints reports whether any tool-call aspect is configured.
func (m *Manager) HasToolPoints() bool {
	return m != nil && (len(m.toolBefore) > 0 || len(m.toolAfter) > 0)
}

// ToolBefore invokes the ToolCallBefore aspects.
func (m *Manager) ToolBefore(ctx context.Context, p *Point, call *ToolCall) error {
	if m == nil {
		return nil
	}
	for _, a := range m.toolBefore {
		if a.PointCut(ctx, p) {
			if err := a.BeforeToolCall(ctx, p, call); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}

// ToolAfter invokes the ToolCallAfter aspects.
func (m *Manager) ToolAfter(ctx context.Context, p *Point, call *ToolCall, res *ToolResult) error {
	if m == nil {
		return nil
	}
	for _, a := range m.toolAfter {
		if a.PointCut(ctx, p) {
			if err := a.AfterToolCall(ctx, p, call, res); err != nil {
				return refused(a, err)
			}
		}
	}
	return nil
}
