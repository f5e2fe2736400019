// Package web holds the built-in web tools: web_fetch, which requests a
// URL and returns its content as the model can read it, and web_search,
// which asks a SearXNG-compatible search endpoint. Both go through the
// network policy of package netguard: every connection is checked after
// name resolution, every redirect is re-checked, caller headers cannot
// carry credentials or smuggle requests, and credentials come only from
// the auth profiles of the tool's configuration.
package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
)

// FetchName is web_fetch's builtin name.
const FetchName = "web_fetch"

// FetchConfig configures web_fetch.
type FetchConfig struct {
	Common
	Methods         []string `json:"methods,omitempty" jsonschema:"HTTP methods the model may use: GET, POST, or both."`
	Format          string   `json:"format,omitempty" jsonschema:"How HTML pages are shown when the call does not say: markdown, text or html (the source)."`
	MaxRequestBytes int      `json:"maxRequestBytes,omitempty" jsonschema:"Largest request body a POST may send."`
}

var defaultFetchConfig = FetchConfig{
	Common:          defaultCommon,
	Methods:         []string{http.MethodGet, http.MethodPost},
	Format:          FormatMarkdown,
	MaxRequestBytes: 1 << 20,
}

// FetchArgs are web_fetch's call arguments.
type FetchArgs struct {
	URL     string            `json:"url" jsonschema:"The http or https URL to request."`
	Method  string            `json:"method,omitempty" jsonschema:"GET (the default) or POST."`
	Headers map[string]string `json:"headers,omitempty" jsonschema:"Extra request headers (Accept, Content-Type, ...). Credentials, cookies, Host, proxy and forwarding headers are refused."`
	Body    string            `json:"body,omitempty" jsonschema:"The request body, for POST. Sent as application/json when it is JSON and no Content-Type is given, else as text/plain."`
	Format  string            `json:"format,omitempty" jsonschema:"How an HTML page is returned: markdown, text, or html (the source)."`
}

var fetchArgsSchema = tools.ArgsSchema[FetchArgs](map[string][]string{
	"method": {http.MethodGet, http.MethodPost},
	"format": {FormatMarkdown, FormatText, FormatHTML},
})

func init() {
	tools.MustRegister(tools.Definition{
		Name:         FetchName,
		Description:  "Fetch a URL (GET or POST) and read it: HTML as Markdown or text, JSON and text as is; SSRF-safe network policy.",
		ConfigSchema: tools.SchemaFor(defaultFetchConfig),
		ArgsSchema:   fetchArgsSchema,
		New:          NewFetch,
	})
}

// Fetch is a web_fetch tool. It is safe for concurrent use.
type Fetch struct {
	*client
	cfg  FetchConfig
	info tools.Info
}

// NewFetch is web_fetch's factory.
func NewFetch(bc tools.BuildContext, raw json.RawMessage) (tools.Tool, error) {
	cfg := defaultFetchConfig
	cfg.Methods = slices.Clone(cfg.Methods)
	if err := tools.DecodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	if len(cfg.Methods) == 0 {
		return nil, &tools.ConfigError{Path: "methods", Msg: "list GET, POST or both"}
	}
	for i, m := range cfg.Methods {
		if m != http.MethodGet && m != http.MethodPost {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("methods[%d]", i), Msg: fmt.Sprintf("%q: only GET and POST", m)}
		}
	}
	if !slices.Contains([]string{FormatMarkdown, FormatText, FormatHTML}, cfg.Format) {
		return nil, &tools.ConfigError{Path: "format", Msg: fmt.Sprintf("%q: one of markdown, text, html", cfg.Format)}
	}
	if cfg.MaxRequestBytes < 0 || cfg.MaxRequestBytes > maxBytesCap {
		return nil, &tools.ConfigError{Path: "maxRequestBytes", Msg: fmt.Sprintf("must be 0 to %d", maxBytesCap)}
	}
	c, err := newClient(bc, cfg.Common)
	if err != nil {
		return nil, err
	}
	t := &Fetch{client: c, cfg: cfg}
	t.info = tools.Info{Name: FetchName, Description: t.describe(), Parameters: fetchArgsSchema}
	return t, nil
}

func (t *Fetch) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Request an http(s) URL with %s and read the response: HTML pages as %s, JSON and text as they are, other content described but not shown. ",
		strings.Join(t.cfg.Methods, " or "), t.cfg.Format)
	fmt.Fprintf(&b, "At most %d bytes of a body are read. ", t.cfg.MaxBytes)
	b.WriteString("Only public addresses are reachable unless configured otherwise; a refused destination, redirect or header is reported with the rule that refused it.")
	return b.String()
}

// Info implements tools.Tool.
func (t *Fetch) Info() tools.Info { return t.info }

// Call implements tools.Tool.
func (t *Fetch) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a FetchArgs
	if err := tools.DecodeArgs(raw, &a); err != nil {
		return tools.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, format, err := t.request(ctx, a)
	if err != nil {
		return tools.Result{}, err
	}
	resp, b, hops, err := t.fetch(req)
	if err != nil {
		return tools.Result{}, err
	}
	final := resp.Request.URL
	r, err := renderBody(b, resp.Header.Get("Content-Type"), format, final.String())
	if err != nil {
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, err, "the page could not be read")
	}
	text := report(req.Method, a.URL, resp, hops, b, r, t.limits.maxBytes)
	return tools.Result{Text: text, IsError: resp.StatusCode >= 400}, nil
}

// request builds the request from the arguments, refusing what the policy
// forbids before anything is sent.
func (t *Fetch) request(ctx context.Context, a FetchArgs) (*http.Request, string, error) {
	method := a.Method
	if method == "" {
		method = http.MethodGet
	}
	if !slices.Contains(t.cfg.Methods, method) {
		return nil, "", tools.Errorf(tools.ErrPolicyDenied, "method %s is not allowed here (allowed: %s)", method, strings.Join(t.cfg.Methods, ", "))
	}
	format := a.Format
	if format == "" {
		format = t.cfg.Format
	}
	u, r := netguard.ParseURL(a.URL)
	if r != nil {
		return nil, "", &tools.Error{Kind: tools.ErrPolicyDenied, Err: r}
	}
	// Checked again by the transport for every hop; checking here too
	// refuses before the headers and body are even looked at.
	if _, r := t.policy.CheckURL(u); r != nil {
		return nil, "", &tools.Error{Kind: tools.ErrPolicyDenied, Err: r}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Headers)) {
		if r := netguard.CheckHeader(name, a.Headers[name]); r != nil {
			return nil, "", &tools.Error{Kind: tools.ErrPolicyDenied, Err: r}
		}
	}
	if a.Body != "" && method != http.MethodPost {
		return nil, "", tools.Errorf(tools.ErrInvalidArgs, "a body is only sent with POST")
	}
	if len(a.Body) > t.cfg.MaxRequestBytes {
		return nil, "", tools.Errorf(tools.ErrInvalidArgs, "the body is %d bytes; at most %d may be sent", len(a.Body), t.cfg.MaxRequestBytes)
	}
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(a.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, "", tools.Wrap(tools.ErrInvalidArgs, err, "the request cannot be built")
	}
	for name, v := range a.Headers {
		req.Header.Set(name, v)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "text/html, application/json;q=0.9, text/plain;q=0.8, */*;q=0.5")
	}
	if method == http.MethodPost && req.Header.Get("Content-Type") == "" {
		if json.Valid([]byte(a.Body)) {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Content-Type", "text/plain; charset=utf-8")
		}
	}
	return req, format, nil
}

// report is what the model reads: a short header, then the content.
func report(method, asked string, resp *http.Response, hops int, b body, r rendered, maxBytes int64) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s %s\nStatus: %s\n", method, resp.Request.URL.Redacted(), resp.Status)
	if hops > 0 {
		fmt.Fprintf(&s, "Redirected: %d time(s), from %s\n", hops, asked)
	}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode/100 == 3 {
		fmt.Fprintf(&s, "Location: %s (not followed)\n", loc)
	}
	if r.mediaType != "" {
		fmt.Fprintf(&s, "Content-Type: %s\n", r.mediaType)
	}
	if r.title != "" {
		fmt.Fprintf(&s, "Title: %s\n", r.title)
	}
	if b.truncated {
		fmt.Fprintf(&s, "Truncated: the body is longer than %d bytes; only its start was read.\n", maxBytes)
	}
	if r.kind == kindBinary {
		fmt.Fprintf(&s, "\n[binary content (%s), %d bytes read; not shown]", r.mediaType, len(b.data))
		return s.String()
	}
	if strings.TrimSpace(r.text) == "" {
		s.WriteString("\n[empty body]")
		return s.String()
	}
	s.WriteString("\n")
	s.WriteString(r.text)
	return s.String()
}
