package aguicheck

import "strings"

// owner says who produced an entity or event: the parent agent (the zero
// value, i.e. no subagentRunId) or one subagent invocation. An empty id is a
// legal opaque subagentRunId and is NOT the parent, which is why this is a
// flag plus a string rather than a string alone.
type owner struct {
	subagent bool
	id       string
}

var parentAgent = owner{}

// label is how the client's messages name an owner.
func (o owner) label() string {
	if !o.subagent {
		return "(the parent agent)"
	}
	return o.id
}

// tagOf reads an event's optional subagentRunId. A null or non-string tag is
// a schema violation reported elsewhere; here it reads as absent, as the
// client's `?? undefined` does.
func tagOf(ev map[string]any) (owner, bool) {
	id, ok := ev["subagentRunId"].(string)
	return owner{subagent: ok, id: id}, ok
}

func stringField(ev map[string]any, key string) (string, bool) {
	s, ok := ev[key].(string)
	return s, ok
}

// orderedSet is a set that remembers insertion order, like a JS Set, so that
// lists in messages ("still active: a, b") come out in the client's order.
type orderedSet struct {
	index map[string]int
	items []string
}

func (s *orderedSet) has(k string) bool {
	_, ok := s.index[k]
	return ok
}

func (s *orderedSet) add(k string) {
	if s.has(k) {
		return
	}
	if s.index == nil {
		s.index = map[string]int{}
	}
	s.index[k] = len(s.items)
	s.items = append(s.items, k)
}

func (s *orderedSet) remove(k string) {
	i, ok := s.index[k]
	if !ok {
		return
	}
	delete(s.index, k)
	s.items = append(s.items[:i], s.items[i+1:]...)
	for j := i; j < len(s.items); j++ {
		s.index[s.items[j]] = j
	}
}

func (s *orderedSet) len() int { return len(s.items) }

func (s *orderedSet) joined() string { return strings.Join(s.items, ", ") }

func (s *orderedSet) clear() { *s = orderedSet{} }
