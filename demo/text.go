package demo

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// configureHint ends the answers that explain the demo.
const configureHint = "For real answers, set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL (README.md, “LLM settings”)."

// summary reports tool results as they are: the demo cannot put them in
// its own words.
func summary(results []toolResult) string {
	var b strings.Builder
	b.WriteString(Marker)
	if len(results) == 1 {
		b.WriteByte(' ')
		b.WriteString(resultLine(results[0]))
	} else {
		fmt.Fprintf(&b, " %d tool results:", len(results))
		for _, r := range results {
			b.WriteString("\n- ")
			b.WriteString(resultLine(r))
		}
	}
	b.WriteString("\nA real model would answer in its own words; the demo model only reports what the tools said.")
	return b.String()
}

// resultLine is one result on one line: a JSON object's fields as
// "key value" pairs, a text quoted and shortened.
func resultLine(r toolResult) string {
	content := strings.TrimSpace(r.Content)
	if after, ok := strings.CutPrefix(content, "Error"); ok {
		return fmt.Sprintf("%s failed: %s", r.Name, clip(strings.TrimLeft(after, " :"), 240))
	}
	var obj map[string]any
	if json.Unmarshal([]byte(content), &obj) == nil && len(obj) > 0 {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		pairs := make([]string, 0, len(keys))
		for _, k := range keys {
			pairs = append(pairs, k+" "+brief(obj[k], 0))
		}
		return fmt.Sprintf("%s answered: %s.", r.Name, clip(strings.Join(pairs, ", "), 240))
	}
	// A sub-agent on the demo model answers with the marker too: once is
	// enough.
	content = strings.TrimSpace(strings.TrimPrefix(content, Marker))
	return fmt.Sprintf("%s answered: “%s”", r.Name, clip(content, 240))
}

// brief shows a JSON value short: a list of objects by their ids (or
// names), an object by its id or name (else its fields, one level deep),
// other values as JSON.
func brief(v any, depth int) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return "null"
	case float64, bool:
		return fmt.Sprint(v)
	case map[string]any:
		if l := label(v); l != "" {
			return l
		}
		if depth == 0 {
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for i, k := range keys {
				keys[i] = k + " " + brief(v[k], 1)
			}
			return "{" + strings.Join(keys, ", ") + "}"
		}
	case []any:
		labels := make([]string, 0, len(v))
		for _, item := range v {
			m, ok := item.(map[string]any)
			if !ok || label(m) == "" {
				labels = nil
				break
			}
			labels = append(labels, label(m))
		}
		if len(labels) > 0 {
			return fmt.Sprintf("(%d) %s", len(v), strings.Join(labels, ", "))
		}
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// label names an object by its id, else its name.
func label(m map[string]any) string {
	for _, k := range []string{"id", "name"} {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func resultsReasoning(results []toolResult) string {
	ns := make([]string, len(results))
	for i, r := range results {
		ns[i] = r.Name
	}
	return fmt.Sprintf("The results of %s are in: I report them.", joinAnd(dedupe(ns)))
}

// explain answers a message no tool fits: what the demo is, what it can
// show, and how to set a real model.
func explain(r *Request, text string) Answer {
	asked := "your message"
	if t := strings.TrimSpace(text); t != "" {
		asked = "“" + clip(t, 80) + "”"
	}
	var b strings.Builder
	var why string
	fmt.Fprintf(&b, "%s A scripted reply to %s", Marker, asked)
	if sys := strings.TrimSpace(r.system()); sys != "" {
		fmt.Fprintf(&b, ", in the role “%s”", clip(sys, 60))
	}
	b.WriteString(". The built-in demo model runs because no LLM is configured: it streams text, calls the tools an agent offers when a message names them, delegates to sub-agents and asks for approvals, but writes no real answers.")
	switch cs := weigh(r.Tools, text); {
	case len(r.Tools) == 0 || !r.toolsAllowed():
		why = "No tools are offered, so I explain what the demo model does."
	default:
		var partial []*candidate
		for _, c := range cs {
			if len(c.matched) > 0 && len(c.missing) > 0 {
				partial = append(partial, c)
			}
		}
		if len(partial) > 0 {
			c := partial[0]
			why = fmt.Sprintf("%s matches the message, but nothing in it fills %s.", c.name, joinAnd(c.missing))
			fmt.Fprintf(&b, " %s fits your message but needs %s, which it does not give: name an id such as A-1001, a value, or quote a text. A real model would ask you for it.", c.name, joinAnd(c.missing))
		} else {
			why = "No offered tool shares a word with the message."
			fmt.Fprintf(&b, " None of this agent's tools (%s) shares a word with your message: ask for what one of them does.", toolList(r.Tools))
		}
	}
	b.WriteByte(' ')
	b.WriteString(configureHint)
	return Answer{Reasoning: why, Text: b.String(), FinishReason: "stop"}
}

func toolList(tools []Tool) string {
	parts := make([]string, 0, len(tools))
	for _, t := range tools {
		p := t.Function.Name
		if d := strings.TrimSpace(t.Function.Description); d != "" {
			p += ": " + clip(d, 60)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// jsonAnswer is a JSON answer: an object fitting the schema, or, with no
// schema, the answer text with the demo model named.
func jsonAnswer(raw json.RawMessage, text string) Answer {
	var v any
	if len(raw) > 0 {
		v = sample(parseSchema(raw), "answer", text, 0)
	} else {
		v = map[string]any{"model": Model, "demo": true, "answer": Marker + " " + clip(text, 400)}
	}
	out, _ := json.Marshal(v)
	return Answer{Text: string(out), FinishReason: "stop"}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func names(cs []*candidate) string {
	ns := make([]string, len(cs))
	for i, c := range cs {
		ns[i] = c.name
	}
	return joinAnd(ns)
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func quoteList(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "“" + w + "”"
	}
	return joinAnd(q)
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func sortStrings(s []string) { slices.Sort(s) }
