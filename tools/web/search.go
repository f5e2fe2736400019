package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
)

// SearchName is web_search's builtin name.
const SearchName = "web_search"

// SearchConfig configures web_search.
type SearchConfig struct {
	Common
	Endpoint string            `json:"endpoint" jsonschema:"Base URL of a SearXNG instance (or any server answering GET /search?q=...&format=json the same way), e.g. https://searx.example.org. Its JSON output must be enabled (search.formats in SearXNG's settings.yml)."`
	Limit    int               `json:"limit,omitempty" jsonschema:"Results returned when the call does not say."`
	MaxLimit int               `json:"maxLimit,omitempty" jsonschema:"Most results a call may ask for."`
	Params   map[string]string `json:"params,omitempty" jsonschema:"Extra query parameters sent with every search (categories, engines, safesearch, language...)."`
}

var defaultSearchConfig = SearchConfig{Common: defaultCommon, Limit: 5, MaxLimit: 20}

// SearchArgs are web_search's call arguments.
type SearchArgs struct {
	Query     string `json:"query" jsonschema:"What to search for."`
	Limit     int    `json:"limit,omitempty" jsonschema:"How many results to return."`
	Page      int    `json:"page,omitempty" jsonschema:"Results page, from 1."`
	Language  string `json:"language,omitempty" jsonschema:"Language of the results, such as en or fr-FR."`
	TimeRange string `json:"time_range,omitempty" jsonschema:"Only results from the last day, month or year."`
}

var searchArgsSchema = tools.ArgsSchema[SearchArgs](map[string][]string{"time_range": {"day", "month", "year"}})

func init() {
	tools.MustRegister(tools.Definition{
		Name:         SearchName,
		Description:  "Search the web through a SearXNG-compatible JSON endpoint; results as title, URL and snippet.",
		ConfigSchema: tools.SchemaFor(defaultSearchConfig),
		ArgsSchema:   searchArgsSchema,
		New:          NewSearch,
	})
}

// Search is a web_search tool. It is safe for concurrent use.
type Search struct {
	*client
	cfg      SearchConfig
	endpoint *url.URL
	info     tools.Info
}

// Bounds of the arguments.
const (
	maxQueryLen   = 1000
	maxTitleLen   = 200
	maxSnippetLen = 400
)

var languagePattern = regexp.MustCompile(`^(all|auto|[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?)$`)

// NewSearch is web_search's factory.
func NewSearch(bc tools.BuildContext, raw json.RawMessage) (tools.Tool, error) {
	cfg := defaultSearchConfig
	if err := tools.DecodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxLimit < 1 || cfg.MaxLimit > 100:
		return nil, &tools.ConfigError{Path: "maxLimit", Msg: "must be 1 to 100"}
	case cfg.Limit < 1 || cfg.Limit > cfg.MaxLimit:
		return nil, &tools.ConfigError{Path: "limit", Msg: fmt.Sprintf("must be 1 to maxLimit (%d)", cfg.MaxLimit)}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Params)) {
		switch k {
		case "q", "format", "pageno":
			return nil, &tools.ConfigError{Path: "params." + k, Msg: "set by the tool"}
		}
		if strings.ContainsFunc(k+cfg.Params[k], unicode.IsControl) {
			return nil, &tools.ConfigError{Path: "params." + k, Msg: "holds a control character"}
		}
	}
	c, err := newClient(bc, cfg.Common)
	if err != nil {
		return nil, err
	}
	ep, err := searchEndpoint(c.policy, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	t := &Search{client: c, cfg: cfg, endpoint: ep}
	t.info = tools.Info{Name: SearchName, Parameters: searchArgsSchema,
		Description: fmt.Sprintf("Search the web. Returns up to %d results (%d unless you ask) as title, URL and snippet; fetch a result with web_fetch to read it.", cfg.MaxLimit, cfg.Limit)}
	return t, nil
}

// searchEndpoint checks the endpoint against the policy now, so a
// configuration that could never work fails at build, naming the field.
func searchEndpoint(p *netguard.Policy, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, &tools.ConfigError{Path: "endpoint", Msg: "the search endpoint's URL is required"}
	}
	u, r := netguard.ParseURL(raw)
	if r == nil {
		_, r = p.CheckURL(u)
	}
	if r != nil {
		msg := r.Reason
		if r.Rule.OpenedByAllowPrivate() {
			msg += "; list its address in allowPrivate to use a search server on your own network"
		}
		return nil, &tools.ConfigError{Path: "endpoint", Msg: msg}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, &tools.ConfigError{Path: "endpoint", Msg: "give the base URL without a query or fragment; use params for extra parameters"}
	}
	if !strings.HasSuffix(u.Path, "/search") {
		u = u.JoinPath("search")
	}
	return u, nil
}

// Info implements tools.Tool.
func (t *Search) Info() tools.Info { return t.info }

// SearchResult is one result as the model reads it.
type SearchResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet,omitempty"`
}

// Call implements tools.Tool.
func (t *Search) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a SearchArgs
	if err := tools.DecodeArgs(raw, &a); err != nil {
		return tools.Result{}, err
	}
	q := strings.TrimSpace(a.Query)
	limit := cmp.Or(a.Limit, t.cfg.Limit)
	switch {
	case q == "":
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "the query is empty")
	case len(q) > maxQueryLen:
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "the query is longer than %d bytes", maxQueryLen)
	case limit < 1 || limit > t.cfg.MaxLimit:
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "limit must be 1 to %d", t.cfg.MaxLimit)
	case a.Page < 0:
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "page starts at 1")
	case a.Language != "" && !languagePattern.MatchString(a.Language):
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "language %q is not a language code such as en or fr-FR", a.Language)
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	u := *t.endpoint
	v := url.Values{}
	for k, p := range t.cfg.Params {
		v.Set(k, p)
	}
	v.Set("q", q)
	v.Set("format", "json")
	v.Set("pageno", strconv.Itoa(max(a.Page, 1)))
	if a.Language != "" {
		v.Set("language", a.Language)
	}
	if a.TimeRange != "" {
		v.Set("time_range", a.TimeRange)
	}
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, err, "the search request cannot be built")
	}
	req.Header.Set("Accept", "application/json")
	resp, b, _, err := t.fetch(req)
	if err != nil {
		return tools.Result{}, err
	}
	results, err := parseResults(resp, b)
	if err != nil {
		return tools.Result{}, err
	}
	if len(results) > limit {
		results = results[:limit]
	}
	structured, _ := json.Marshal(map[string]any{"query": q, "results": results})
	return tools.Result{Text: formatResults(q, max(a.Page, 1), results), Structured: structured}, nil
}

// searxResponse is the part of SearXNG's JSON answer the tool reads.
type searxResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

func parseResults(resp *http.Response, b body) ([]SearchResult, error) {
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusForbidden {
			hint = " (a SearXNG instance answers 403 when its JSON format is not enabled: add json to search.formats in settings.yml)"
		}
		return nil, tools.Errorf(tools.ErrExecutionFailed, "the search endpoint answered %s%s", resp.Status, hint)
	}
	if b.truncated {
		return nil, tools.Errorf(tools.ErrExecutionFailed, "the search answer is larger than maxBytes")
	}
	var sr searxResponse
	if err := json.Unmarshal(b.data, &sr); err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "the search endpoint did not answer SearXNG JSON")
	}
	seen := map[string]bool{}
	out := make([]SearchResult, 0, len(sr.Results))
	for _, r := range sr.Results {
		link := clean(r.URL, 2048)
		if link == "" || seen[link] {
			continue
		}
		seen[link] = true
		out = append(out, SearchResult{Title: clean(r.Title, maxTitleLen), URL: link, Snippet: clean(r.Content, maxSnippetLen)})
	}
	return out, nil
}

// clean puts a result field on one line, without control characters,
// and cuts it to max runes.
func clean(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = collapseSpace(s)
	if n := 0; len(s) > max {
		for i := range s {
			if n == max {
				return s[:i] + "…"
			}
			n++
		}
	}
	return s
}

func formatResults(q string, page int, results []SearchResult) string {
	var b strings.Builder
	if len(results) == 0 {
		fmt.Fprintf(&b, "No results for %q (page %d).", q, page)
		return b.String()
	}
	fmt.Fprintf(&b, "Results for %q (page %d):\n", q, page)
	for i, r := range results {
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, cmp.Or(r.Title, "(no title)"), r.URL)
		if r.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", r.Snippet)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
