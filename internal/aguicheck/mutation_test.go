package aguicheck

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestDifferentialMutations derives a few hundred streams from the two full
// runs (fullrun_test.go)
// by deterministic random edits (drop, duplicate, swap or move events; add,
// change or drop a subagent tag; rename an id; replace any value, at any
// depth, by a value of another JSON type; add an unknown field) and requires the Go checker
// and the real client to agree on each, beyond the cases anyone thought to
// write. ruleagent's own contract is set aside here, since the client does
// not have it: a stream counts as rejected by Go when it breaks an AG-UI rule.
func TestDifferentialMutations(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var streams [][][]byte
	var edits []string
	for n := range 400 {
		base := fullRun
		if n%2 == 1 {
			base = otherEventsRun
		}
		events, edit := mutate(rng, base)
		for range rng.IntN(2) { // sometimes a second edit on top
			var more string
			events, more = mutate(rng, events)
			edit += "; " + more
		}
		streams = append(streams, events)
		edits = append(edits, edit)
	}
	verdicts := clientVerdictsOrSkip(t, root, streams)
	rejected := 0
	for i, events := range streams {
		var agui []error
		for _, err := range Check(events) {
			if err.(*Violation).Stage != StageContract {
				agui = append(agui, err)
			}
		}
		if agui != nil {
			rejected++
		}
		c := ruleCase{name: edits[i], events: events}
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
			t.Log(edits[i])
			compareVerdicts(t, c, agui, verdicts[i])
		})
	}
	// Guard the generator itself: a mix that is all valid or all invalid
	// would prove little.
	if rejected < len(streams)/4 || rejected > len(streams)*9/10 {
		t.Errorf("%d of %d mutated streams are invalid; the mix should be more even", rejected, len(streams))
	}
}

// mutate applies one random edit to a copy of events and says what it did.
func mutate(rng *rand.Rand, events [][]byte) ([][]byte, string) {
	out := append([][]byte{}, events...)
	i := rng.IntN(len(out))
	switch rng.IntN(9) {
	case 0:
		return append(out[:i], out[i+1:]...), fmt.Sprintf("drop %d", i)
	case 1:
		return append(out[:i+1], out[i:]...), fmt.Sprintf("duplicate %d", i)
	case 2:
		j := rng.IntN(len(out))
		out[i], out[j] = out[j], out[i]
		return out, fmt.Sprintf("swap %d and %d", i, j)
	case 3:
		j := rng.IntN(len(out))
		ev := out[i]
		out = append(out[:i], out[i+1:]...)
		out = append(out[:j], append([][]byte{ev}, out[j:]...)...)
		return out, fmt.Sprintf("move %d to %d", i, j)
	case 4:
		tags := []any{"sub-1", "sub-2", ""}
		tag := tags[rng.IntN(len(tags))]
		out[i] = editField(out[i], "subagentRunId", tag)
		return out, fmt.Sprintf("tag %d with %q", i, tag)
	case 5:
		out[i] = editField(out[i], "subagentRunId", nil)
		return out, fmt.Sprintf("untag %d", i)
	case 6:
		edited, path := replaceRandomValue(rng, out[i])
		out[i] = edited
		return out, fmt.Sprintf("set %s of %d to %s", path, i, edited)
	case 7:
		out[i] = editField(out[i], "note", "not in the schema")
		return out, fmt.Sprintf("add an unknown field to %d", i)
	default:
		for _, key := range []string{"messageId", "toolCallId", "stepName", "parentMessageId", "subagentRunId"} {
			if edited := editField(out[i], key, "renamed"); string(edited) != string(out[i]) {
				out[i] = edited
				return out, fmt.Sprintf("rename %s of %d", key, i)
			}
		}
		return out, fmt.Sprintf("nothing to rename at %d", i)
	}
}

// editField sets key to value (deletes it for nil) in one event's JSON. For
// a rename, only a key the event already has is changed.
func editField(raw []byte, key string, value any) []byte {
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		panic(err)
	}
	_, present := ev[key]
	switch {
	case value == nil:
		delete(ev, key)
	case value == "renamed":
		if !present {
			return raw
		}
		ev[key] = fmt.Sprint(ev[key], "-renamed")
	default:
		ev[key] = value
	}
	out, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return out
}

// replaceRandomValue replaces one value anywhere inside an event (not its
// type) by a value of a random JSON kind, and returns the event and the path.
func replaceRandomValue(rng *rand.Rand, raw []byte) ([]byte, string) {
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		panic(err)
	}
	type slot struct {
		path string
		set  func(any)
	}
	var slots []slot
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case map[string]any:
			for k, child := range t {
				if path == "" && k == "type" {
					continue
				}
				slots = append(slots, slot{path + "/" + k, func(x any) { t[k] = x }})
				walk(child, path+"/"+k)
			}
		case []any:
			for i, child := range t {
				slots = append(slots, slot{fmt.Sprintf("%s/%d", path, i), func(x any) { t[i] = x }})
				walk(child, fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	walk(ev, "")
	if len(slots) == 0 {
		return raw, "nothing"
	}
	// Map iteration is random; sort so the seed alone decides the choice.
	slices.SortFunc(slots, func(a, b slot) int { return strings.Compare(a.path, b.path) })
	values := []any{nil, 7, 1.5, -1, "", "text", true, []any{}, map[string]any{}}
	chosen := slots[rng.IntN(len(slots))]
	chosen.set(values[rng.IntN(len(values))])
	out, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return out, chosen.path
}
