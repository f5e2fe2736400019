package demo

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
)

// Answer is what the demo model answers one request with.
type Answer struct {
	// Reasoning says, for show, why the demo answers as it does.
	Reasoning string
	Text      string
	ToolCalls []Call
	// FinishReason is "tool_calls" when the answer calls tools, else "stop".
	FinishReason string
}

// Call is one tool call of an answer.
type Call struct {
	ID, Name, Arguments string
}

// Decide answers a request, deterministically, from the request alone:
//   - a classifier's prompt (ai/intent: "Classify ... intents" with one
//     "- name: description" line each) gets the name of the intent sharing
//     the most words with the last user message, or Other;
//   - tool results after the last user message get a summary of them;
//   - offered tools get called when the message shares words with a tool's
//     name or description and fills its required arguments (an id such as
//     A-1001, a value of its enum, a number, a quoted text); sub-agents
//     matching the message are called together, in parallel, and an agent
//     that offers only sub-agents calls them all;
//   - otherwise, a text saying what the demo is and how to set a real model.
//
// Text answers start with Marker; with response_format json_object or
// json_schema the answer is JSON instead (fitting the schema).
func Decide(r *Request) Answer {
	u := r.lastUser()
	text := ""
	if u >= 0 {
		text = r.Messages[u].Text()
	}
	wantJSON, jsonSchema := r.jsonAnswer()
	if name, ok := classify(r.system(), text); ok {
		return Answer{Text: name, FinishReason: "stop"}
	}
	if results := r.resultsAfter(u); len(results) > 0 {
		if wantJSON {
			return jsonAnswer(jsonSchema, summary(results))
		}
		return Answer{Reasoning: resultsReasoning(results), Text: summary(results), FinishReason: "stop"}
	}
	if r.toolsAllowed() {
		if a, ok := callTools(r, text); ok {
			return a
		}
	}
	if wantJSON {
		return jsonAnswer(jsonSchema, text)
	}
	return explain(r, text)
}

// intentLine is one intent of ai/intent's classifier prompt.
var intentLine = regexp.MustCompile(`(?m)^- ([A-Za-z0-9_-]+)(?:: (.*))?$`)

// classify answers a classifier's prompt: the intent whose name and
// description share the most words with the message; a tie or no shared
// word is Other.
func classify(system, text string) (string, bool) {
	lower := strings.ToLower(system)
	if !strings.Contains(lower, "classify") || !strings.Contains(lower, "intent") {
		return "", false
	}
	lines := intentLine.FindAllStringSubmatch(system, -1)
	if len(lines) < 2 {
		return "", false
	}
	asked := words(text)
	best, bestScore, tie := "Other", 0, false
	for _, l := range lines {
		if strings.EqualFold(l[1], "Other") {
			continue
		}
		score := len(overlap(asked, words(l[1]+" "+l[2])))
		switch {
		case score > bestScore:
			best, bestScore, tie = l[1], score, false
		case score == bestScore && score > 0:
			tie = true
		}
	}
	if tie || bestScore == 0 {
		return "Other", true
	}
	return best, true
}

// candidate is an offered tool weighed against the message.
type candidate struct {
	name     string
	matched  []string
	args     map[string]any
	missing  []string
	subAgent bool
}

func (c *candidate) score() int { return len(c.matched) + 2*(len(c.args)) }

// weigh matches every offered tool against the message.
// The words of identifiers (support-agent, A-1001; not get_order_status,
// which may name the tool) are not matched: they
// fill arguments, and a name such as support-agent says nothing of which
// tool to call.
func weigh(tools []Tool, text string) []*candidate {
	asked := words(idToken.ReplaceAllStringFunc(text, func(m string) string {
		if strings.ContainsAny(m, "-0123456789") {
			return " "
		}
		return m
	}))
	out := make([]*candidate, 0, len(tools))
	for _, t := range tools {
		s := parseSchema(t.Function.Parameters)
		c := &candidate{name: t.Function.Name, subAgent: s.subAgent(), args: map[string]any{}}
		c.matched = overlap(asked, words(t.Function.Name+" "+t.Function.Description))
		f := newFiller(text)
		for _, k := range s.Required {
			if v, ok := f.fill(k, s.Properties[k]); ok {
				c.args[k] = v
			} else {
				c.missing = append(c.missing, k)
			}
		}
		// A tool that requires nothing but takes a text (a sub-agent's
		// message, a search's query) gets the message there: a call
		// without it would say nothing.
		for _, k := range s.names() {
			if len(s.Required) > 0 || !isTextLike(k) || !s.Properties[k].is("string") {
				continue
			}
			c.args[k] = strings.TrimSpace(text)
		}
		out = append(out, c)
	}
	return out
}

func isTextLike(name string) bool {
	for _, n := range textLike {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// callTools picks the calls for the message, if any fit.
func callTools(r *Request, text string) (Answer, bool) {
	all := weigh(r.Tools, text)
	var fit, subAgents []*candidate
	for _, c := range all {
		if c.subAgent {
			subAgents = append(subAgents, c)
		}
		if len(c.matched) > 0 && len(c.missing) == 0 {
			fit = append(fit, c)
		}
	}
	var chosen []*candidate
	var why string
	switch {
	case len(fit) > 0 && fit[0].subAgent && allSubAgents(fit):
		chosen = fit
		why = fmt.Sprintf("The message matches the sub-agent%s %s (%s): I hand it to %s.", plural(len(fit)), names(fit), matchedWords(fit), them(len(fit)))
	case len(fit) > 0:
		best := fit[0]
		for _, c := range fit[1:] {
			if c.score() > best.score() {
				best = c
			}
		}
		chosen = []*candidate{best}
		why = fmt.Sprintf("The message shares %s with %s", quoteList(best.matched), best.name)
		if filled := filledFrom(best); filled != "" {
			why += ", and " + filled
		}
		why += ": I call it."
	case len(subAgents) > 0 && len(subAgents) == len(all) && strings.TrimSpace(text) != "":
		chosen = subAgents
		why = fmt.Sprintf("This agent delegates to the sub-agent%s %s: I hand the message to %s.", plural(len(chosen)), names(chosen), them(len(chosen)))
	default:
		return Answer{}, false
	}
	if len(chosen) > 1 {
		why += " They run in parallel."
	}
	a := Answer{Reasoning: why, FinishReason: "tool_calls"}
	seed := fnv.New64a()
	fmt.Fprintf(seed, "%d\x00%s", len(r.Messages), text)
	for i, c := range chosen {
		args, _ := json.Marshal(c.args)
		a.ToolCalls = append(a.ToolCalls, Call{ID: fmt.Sprintf("call_demo_%010x_%d", seed.Sum64()&0xffffffffff, i), Name: c.name, Arguments: string(args)})
	}
	if len(chosen) == 1 {
		a.Text = fmt.Sprintf("%s Calling %s with %s.", Marker, chosen[0].name, a.ToolCalls[0].Arguments)
	} else {
		a.Text = fmt.Sprintf("%s Calling %s in parallel.", Marker, names(chosen))
	}
	return a, true
}

func allSubAgents(cs []*candidate) bool {
	for _, c := range cs {
		if !c.subAgent {
			return false
		}
	}
	return true
}

// filledFrom says which arguments came from the message, for the reasoning.
func filledFrom(c *candidate) string {
	var parts []string
	for k, v := range c.args {
		if s, ok := v.(string); ok && len(s) <= 40 {
			parts = append(parts, fmt.Sprintf("%s is “%s”", k, s))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sortStrings(parts)
	return strings.Join(parts, ", ")
}

func matchedWords(cs []*candidate) string {
	var all []string
	for _, c := range cs {
		all = append(all, c.matched...)
	}
	return quoteList(dedupe(all))
}
