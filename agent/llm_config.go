package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/events"
)

// Endpoint is one OpenAI-compatible server and the model to use on it.
type Endpoint struct {
	// URL is the base URL, for example https://api.openai.com/v1.
	URL string `json:"url"`
	// Key is the API key (sent as a Bearer token); may be empty for local servers.
	Key string `json:"key,omitempty"`
	// Model is the model name.
	Model string `json:"model"`
	// Params replaces the primary endpoint's params when set (failover only).
	Params *Params `json:"params,omitempty"`
}

// Params are the sampling parameters and extra body fields of requests.
// Nil pointers are not sent, so 0 is a value that can be sent.
type Params struct {
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"topP,omitempty"`
	MaxTokens        *int     `json:"maxTokens,omitempty"`
	Stop             []string `json:"stop,omitempty"`
	PresencePenalty  *float64 `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequencyPenalty,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	// ExtraFields are added to the request body as they are; a dotted key
	// nests ("thinking.type": "enabled" sends {"thinking":{"type":"enabled"}}).
	ExtraFields map[string]any `json:"extraFields,omitempty"`
	// ReasoningEcho says which earlier assistant messages carry their
	// reasoning back to the model, as reasoning_content: "none" (the
	// default; most providers ignore it or refuse it), "toolCalls" (those
	// that call tools: what thinking models with tool use require within a
	// turn) or "all".
	ReasoningEcho string `json:"reasoningEcho,omitempty"`
	// ResponseFormat asks for structured answers, sent as response_format:
	// "text", "json_object", or a JSON Schema as OpenAI's json_schema
	// object ({"name", "schema", "strict"}).
	ResponseFormat json.RawMessage `json:"responseFormat,omitempty"`
}

// responseFormat turns Params.ResponseFormat into the response_format
// body field (nil: none), and says whether answers are JSON.
func responseFormat(raw json.RawMessage) (v any, isJSON bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		switch name {
		case "text":
			return map[string]any{"type": "text"}, false, nil
		case "json_object":
			return map[string]any{"type": "json_object"}, true, nil
		}
		return nil, false, configerr.New("params.responseFormat", "%q is not text, json_object or a json_schema object", name)
	}
	var js struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	if err := json.Unmarshal(raw, &js); err != nil || js.Name == "" || len(js.Schema) == 0 || js.Schema[0] != '{' {
		return nil, false, configerr.New(`params.responseFormat`, `a json_schema object needs a "name" and a "schema" object`)
	}
	return map[string]any{"type": "json_schema", "json_schema": js}, true, nil
}

// Check reports a reasoningEcho or responseFormat that is not one of
// theirs, naming the field; nil params are fine.
func (p *Params) Check() error {
	if p == nil {
		return nil
	}
	if _, err := parseReasoningEcho(p); err != nil {
		return err
	}
	_, _, err := responseFormat(p.ResponseFormat)
	return err
}

// JSONAnswers reports whether p asks for JSON answers (responseFormat
// json_object or a schema).
func (p *Params) JSONAnswers() bool {
	if p == nil {
		return false
	}
	_, isJSON, _ := responseFormat(p.ResponseFormat)
	return isJSON
}

// reasoningEcho is a parsed Params.ReasoningEcho.
type reasoningEcho uint8

const (
	echoNone reasoningEcho = iota
	echoToolCalls
	echoAll
)

func parseReasoningEcho(p *Params) (reasoningEcho, error) {
	if p == nil {
		return echoNone, nil
	}
	switch p.ReasoningEcho {
	case "", "none":
		return echoNone, nil
	case "toolCalls":
		return echoToolCalls, nil
	case "all":
		return echoAll, nil
	}
	return echoNone, configerr.New("params.reasoningEcho", "%q is not one of none, toolCalls, all", p.ReasoningEcho)
}

// carries reports whether an assistant message sends its reasoning back.
func (e reasoningEcho) carries(m *events.Message) bool {
	return m.Reasoning != "" && (e == echoAll || e == echoToolCalls && len(m.ToolCalls) > 0)
}

// LLMConfig configures a Client.
type LLMConfig struct {
	// Endpoints are tried in order: the primary first, then the failover
	// endpoints, each with its own model.
	Endpoints []Endpoint
	// MaxRetries is how many times a retryable failure is retried on the
	// same endpoint before moving to the next (0 disables retries).
	MaxRetries int
	// RetryBackoff is the first retry's delay; it doubles each attempt
	// (with jitter), up to 30s. A Retry-After header takes precedence.
	RetryBackoff time.Duration
	// CircuitCooldown is how long an endpoint that exhausted its retries is
	// skipped (doubling while it keeps failing, up to 10 minutes); 0
	// disables the breaker.
	CircuitCooldown time.Duration
	// FirstByteTimeout is the longest a streamed answer may stay silent
	// before it starts (its first delta of reasoning, text or a tool call):
	// no byte for this long, not even a keepalive, abandons the attempt,
	// which is retried. 0 disables. See DefaultFirstByteTimeout.
	FirstByteTimeout time.Duration
	// IdleTimeout is the longest a streamed answer may stay silent once it
	// has started; the run then fails with a StallError (an llm_error).
	// 0 disables. See DefaultIdleTimeout.
	IdleTimeout time.Duration
	// HTTPClient sends the requests; nil uses a client with sane
	// connection timeouts and no overall timeout (streams can be long).
	HTTPClient *http.Client
	// Headers are added to every request.
	Headers map[string]string
}

// Validate reports configuration mistakes, naming the field.
func (c *LLMConfig) Validate() error {
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("no endpoint configured")
	}
	for i, e := range c.Endpoints {
		field := "url"
		if i > 0 {
			field = fmt.Sprintf("failover[%d].url", i-1)
		}
		if e.URL == "" {
			return configerr.New(field, "missing")
		}
		if !strings.HasPrefix(e.URL, "http://") && !strings.HasPrefix(e.URL, "https://") {
			return configerr.New(field, "%q must start with http:// or https://", e.URL)
		}
		if e.Model == "" {
			return configerr.New(strings.TrimSuffix(field, "url")+"model", "missing")
		}
	}
	if c.MaxRetries < 0 {
		return configerr.New("maxRetries", "must not be negative")
	}
	return nil
}

// bodyFields turns the model and params into the fixed part of a request
// body, as a JSON object. Extra fields are merged last, so they can set any
// field, nested ones included.
func bodyFields(model string, p *Params, stream bool) (map[string]any, error) {
	m := map[string]any{"model": model}
	if p != nil {
		if p.Temperature != nil {
			m["temperature"] = *p.Temperature
		}
		if p.TopP != nil {
			m["top_p"] = *p.TopP
		}
		if p.MaxTokens != nil {
			m["max_tokens"] = *p.MaxTokens
		}
		if len(p.Stop) > 0 {
			m["stop"] = p.Stop
		}
		if p.PresencePenalty != nil {
			m["presence_penalty"] = *p.PresencePenalty
		}
		if p.FrequencyPenalty != nil {
			m["frequency_penalty"] = *p.FrequencyPenalty
		}
		if p.Seed != nil {
			m["seed"] = *p.Seed
		}
		rf, _, err := responseFormat(p.ResponseFormat)
		if err != nil {
			return nil, err
		}
		if rf != nil {
			m["response_format"] = rf
		}
	}
	if stream {
		m["stream"] = true
		m["stream_options"] = map[string]any{"include_usage": true}
	}
	if p != nil {
		for k, v := range p.ExtraFields {
			if err := setPath(m, k, v); err != nil {
				return nil, configerr.Prefix(fmt.Sprintf("params.extraFields.%s", k), err)
			}
		}
	}
	if _, err := json.Marshal(m); err != nil {
		return nil, configerr.Prefix("params", err)
	}
	return m, nil
}

// setPath sets m[a][b][c] = v for the key "a.b.c", creating or merging
// nested objects.
func setPath(m map[string]any, key string, v any) error {
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if p == "" {
			return fmt.Errorf("empty segment in %q", key)
		}
	}
	cur := m
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			if _, exists := cur[p]; exists {
				return fmt.Errorf("%q is not an object", p)
			}
			next = map[string]any{}
		} else {
			next = maps.Clone(next)
		}
		cur[p] = next
		cur = next
	}
	last := parts[len(parts)-1]
	if sub, ok := v.(map[string]any); ok {
		if existing, ok := cur[last].(map[string]any); ok {
			merged := maps.Clone(existing)
			maps.Copy(merged, sub)
			v = merged
		}
	}
	cur[last] = v
	return nil
}
