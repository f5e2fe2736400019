package server

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// EventDifference is the first event where a replay's events differ from
// the recorded run's.
type EventDifference struct {
	// Index is the recorded event's place among the run's events (from
	// 0), Type its type; Index is the replay's event's place, and Type
	// its type, when the replay has an event the run did not.
	Index int    `json:"index"`
	Type  string `json:"type"`
	// Lane is the sub-agent run (its recorded id) whose events differ;
	// empty for the run's own.
	Lane string `json:"lane,omitempty"`
	// Field is the path of the first field that differs ("delta",
	// "metadata.model", ...), or "(missing)" / "(extra)" for an event one
	// side lacks.
	Field    string `json:"field"`
	Recorded string `json:"recorded,omitempty"`
	Replayed string `json:"replayed,omitempty"`
}

func (d *EventDifference) String() string {
	s := fmt.Sprintf("event %d (%s)", d.Index, d.Type)
	if d.Lane != "" {
		s += " of sub-agent " + d.Lane
	}
	s += ": " + d.Field
	if d.Recorded != "" || d.Replayed != "" {
		s += fmt.Sprintf(": recorded %s, replayed %s", d.Recorded, d.Replayed)
	}
	return s
}

// CompareEvents compares a replay's events (AG-UI JSON) with the recorded
// run's, and returns the first difference (nil: the same).
//
// Events are compared run by run (the run's own, and each sub-agent's,
// matched through the SUBAGENT_STARTED that opens it), in order, except
// that the events of tool calls that ran at the same time may interleave
// differently: each call's events (TOOL_CALL_*, a rulechain tool's node
// steps, a sub-agent's SUBAGENT_*) keep their order and their place among
// the run's other events. Ids the replay makes anew (run, thread, message,
// sub-agent, interrupt ids) need only correspond one to one; times
// (timestamp, durationMs, an interrupt's expiresAt, a retry's delayMs)
// are not compared.
func CompareEvents(recorded, replayed [][]byte) *EventDifference {
	a, d := laneEvents(recorded)
	if d != nil {
		return d
	}
	b, d := laneEvents(replayed)
	if d != nil {
		d.Field = "the replay's event is not JSON"
		return d
	}
	ids := idMap{fwd: map[string]string{}, back: map[string]string{}}
	for _, name := range a.order {
		other := name
		if name != "" {
			other = ids.fwd[name]
		}
		la, lb := a.lanes[name], b.lanes[other]
		if lb == nil {
			lb = &lane{threads: map[string][]entry{}}
		}
		if d := compareList(la.main, lb.main, &ids, name); d != nil {
			return d
		}
		for _, t := range sortedKeys(la.threads) {
			if d := compareList(la.threads[t], lb.threads[t], &ids, name); d != nil {
				return d
			}
		}
		for _, t := range sortedKeys(lb.threads) {
			if _, ok := la.threads[t]; !ok {
				e := lb.threads[t][0]
				return &EventDifference{Index: e.idx, Type: e.typ, Lane: name, Field: "(extra)"}
			}
		}
	}
	for _, name := range b.order {
		if name != "" && ids.back[name] == "" {
			e := b.lanes[name].first()
			return &EventDifference{Index: e.idx, Type: e.typ, Lane: name, Field: "(extra)"}
		}
	}
	return nil
}

// entry is one event of a lane.
type entry struct {
	idx int
	typ string
	ev  map[string]any
	// barrier is how many of the lane's main events came before it.
	barrier int
}

type lane struct {
	main    []entry
	threads map[string][]entry
}

func (l *lane) first() entry {
	e := entry{idx: -1}
	for _, x := range l.main {
		return x
	}
	for _, t := range l.threads {
		if len(t) > 0 && (e.idx < 0 || t[0].idx < e.idx) {
			e = t[0]
		}
	}
	return e
}

type lanes struct {
	lanes map[string]*lane
	order []string
}

// laneEvents splits events into lanes (the run's, each sub-agent's) and,
// in each, its main sequence and its tool calls' own.
func laneEvents(raw [][]byte) (*lanes, *EventDifference) {
	out := &lanes{lanes: map[string]*lane{}}
	subThread := map[string]string{}
	for i, r := range raw {
		v, err := decodeJSON(r)
		ev, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, &EventDifference{Index: i, Field: "the recorded event is not JSON"}
		}
		typ := asString(ev["type"])
		ln, thread := asString(ev["subagentRunId"]), ""
		switch typ {
		case "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR":
			ln = asString(ev["parentSubagentRunId"])
			if typ == "SUBAGENT_STARTED" {
				thread = asString(ev["parentToolCallId"])
				subThread[asString(ev["subagentRunId"])] = thread
			} else {
				thread = subThread[asString(ev["subagentRunId"])]
			}
		default:
			if strings.HasPrefix(typ, "TOOL_CALL_") {
				thread = asString(ev["toolCallId"])
			} else if md, ok := ev["metadata"].(map[string]any); ok {
				thread = asString(md["toolCallId"])
			}
		}
		thread = strings.TrimPrefix(thread, ln+":")
		l := out.lanes[ln]
		if l == nil {
			l = &lane{threads: map[string][]entry{}}
			out.lanes[ln] = l
			out.order = append(out.order, ln)
		}
		e := entry{idx: i, typ: typ, ev: ev, barrier: len(l.main)}
		if thread == "" {
			l.main = append(l.main, e)
		} else {
			l.threads[thread] = append(l.threads[thread], e)
		}
	}
	if out.lanes[""] == nil {
		out.lanes[""] = &lane{threads: map[string][]entry{}}
		out.order = append([]string{""}, out.order...)
	} else if out.order[0] != "" {
		out.order = append([]string{""}, slices.DeleteFunc(out.order, func(s string) bool { return s == "" })...)
	}
	return out, nil
}

func compareList(a, b []entry, ids *idMap, ln string) *EventDifference {
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(b):
			return &EventDifference{Index: a[i].idx, Type: a[i].typ, Lane: ln, Field: "(missing)"}
		case i >= len(a):
			return &EventDifference{Index: b[i].idx, Type: b[i].typ, Lane: ln, Field: "(extra)"}
		}
		x, y := a[i], b[i]
		d := &EventDifference{Index: x.idx, Type: x.typ, Lane: ln}
		if x.barrier != y.barrier {
			d.Field, d.Recorded, d.Replayed = "(its place)", "after "+strconv.Itoa(x.barrier)+" events", "after "+strconv.Itoa(y.barrier)
			return d
		}
		if path, u, v, differ := ids.diff("", x.typ, x.ev, y.ev); differ {
			d.Field, d.Recorded, d.Replayed = path, clip(show(u)), clip(show(v))
			return d
		}
	}
	return nil
}

// idMap pairs the recorded run's ids with the replay's, one to one.
type idMap struct{ fwd, back map[string]string }

func (m *idMap) pair(a, b string) bool {
	if x, ok := m.fwd[a]; ok {
		return x == b
	}
	if y, ok := m.back[b]; ok {
		return y == a
	}
	m.fwd[a], m.back[b] = b, a
	return true
}

// idFields are the fields that hold ids a replay makes anew.
var idFields = map[string]bool{"runId": true, "threadId": true, "messageId": true, "parentMessageId": true, "toolCallId": true,
	"subagentRunId": true, "parentRunId": true, "parentSubagentRunId": true, "parentToolCallId": true}

// timeFields are the fields that hold times, by the path of their object.
func timeField(path, key, typ string) bool {
	switch {
	case key == "timestamp" && path == "":
		return true
	case key == "durationMs" && path == "metadata":
		return true
	case key == "expiresAt" && inInterrupts(path):
		return true
	case key == "delayMs" && path == "value" && typ == "CUSTOM":
		return true
	}
	return false
}

// inInterrupts reports a path that is an element of an interrupts array
// (RUN_FINISHED's outcome.interrupts, SUBAGENT_FINISHED's).
func inInterrupts(path string) bool {
	return strings.HasPrefix(path[strings.LastIndexByte(path, '.')+1:], "interrupts[")
}

// diff is firstDiff with ids paired and times skipped.
func (m *idMap) diff(path, typ string, a, b any) (string, any, any, bool) {
	x, ok := a.(map[string]any)
	if !ok {
		if xs, ok := a.([]any); ok {
			ys, ok := b.([]any)
			if !ok {
				return path, a, b, true
			}
			for i := range max(len(xs), len(ys)) {
				p := path + "[" + strconv.Itoa(i) + "]"
				if i >= len(xs) || i >= len(ys) {
					return p, at(xs, i), at(ys, i), true
				}
				if path == "pendingToolCallIds" {
					if !m.pair(asString(xs[i]), asString(ys[i])) {
						return p, xs[i], ys[i], true
					}
					continue
				}
				if q, u, v, d := m.diff(p, typ, xs[i], ys[i]); d {
					return q, u, v, true
				}
			}
			return "", nil, nil, false
		}
		return firstDiff(path, a, b)
	}
	y, ok := b.(map[string]any)
	if !ok {
		return path, a, b, true
	}
	keys := slices.Sorted(maps.Keys(x))
	for k := range y {
		if _, ok := x[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if timeField(path, k, typ) {
			continue
		}
		p := k
		if path != "" {
			p = path + "." + k
		}
		av, aok := x[k]
		bv, bok := y[k]
		if !aok || !bok {
			return p, missing(av, aok), missing(bv, bok), true
		}
		sa, isStr := av.(string)
		if isStr && (idFields[k] || k == "id" && inInterrupts(path)) {
			sb, ok := bv.(string)
			if !ok || !m.pair(sa, sb) {
				return p, av, bv, true
			}
			continue
		}
		if q, u, v, d := m.diff(p, typ, av, bv); d {
			return q, u, v, true
		}
	}
	return "", nil, nil, false
}

func at(xs []any, i int) any {
	if i < len(xs) {
		return xs[i]
	}
	return absent{}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
