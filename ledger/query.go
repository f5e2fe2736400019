package ledger

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query asks for totals over a time range, grouped and filtered.
type Query struct {
	// Since and Until bound the records' times: Since <= time < Until.
	Since, Until time.Time
	// By are the dimensions to group by (Dimensions); none gives the
	// total only.
	By []string
	// Filters: only records with these values (empty: any).
	RunID, ThreadID, UserID, ChainID, Model string
	// Limit bounds the groups returned (the largest first); 0 is all.
	Limit int
}

// Dimensions are what totals can be grouped by.
var Dimensions = []string{"run", "thread", "user", "chain", "model", "provider", "day", "source"}

// Group is the totals of one value of the grouping dimensions.
type Group struct {
	Key map[string]string `json:"key"`
	Totals
}

// MarshalJSON writes the key beside the totals (Totals has its own).
func (g Group) MarshalJSON() ([]byte, error) {
	k, err := json.Marshal(g.Key)
	if err != nil {
		return nil, err
	}
	t, err := g.Totals.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := append(append([]byte(`{"key":`), k...), ',')
	return append(b, t[1:]...), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (g *Group) UnmarshalJSON(b []byte) error {
	var k struct {
		Key map[string]string `json:"key"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	g.Key = k.Key
	return json.Unmarshal(b, &g.Totals)
}

// Report answers a Query.
type Report struct {
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	By       []string  `json:"by"`
	Currency string    `json:"currency,omitempty"`
	Groups   []Group   `json:"groups"`
	// More counts the groups left out by the query's Limit.
	More  int    `json:"more,omitempty"`
	Total Totals `json:"total"`
}

func (r *Record) dim(name string) string {
	switch name {
	case "run":
		return r.RunID
	case "thread":
		return r.ThreadID
	case "user":
		return r.UserID
	case "chain":
		return r.ChainID
	case "model":
		return r.Model
	case "provider":
		return r.Provider
	case "day":
		return r.Day()
	case "source":
		return r.Source
	}
	return ""
}

// Check refuses an unknown dimension or an empty range.
func (q *Query) Check() error {
	for _, b := range q.By {
		if !slices.Contains(Dimensions, b) {
			return fmt.Errorf("by: unknown dimension %q (want %s)", b, strings.Join(Dimensions, ", "))
		}
	}
	if !q.Until.After(q.Since) {
		return fmt.Errorf("until (%s) must be after since (%s)", q.Until.UTC().Format(time.RFC3339), q.Since.UTC().Format(time.RFC3339))
	}
	return nil
}

func (q *Query) match(r *Record) bool {
	return !r.Time.Before(q.Since) && r.Time.Before(q.Until) &&
		(q.RunID == "" || r.RunID == q.RunID) && (q.ThreadID == "" || r.ThreadID == q.ThreadID) &&
		(q.UserID == "" || r.UserID == q.UserID) && (q.ChainID == "" || r.ChainID == q.ChainID) &&
		(q.Model == "" || r.Model == q.Model)
}

// Query adds up the records q asks for, after writing what is queued (a
// caller sees its own runs' calls).
func (l *Ledger) Query(ctx context.Context, q Query) (*Report, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	if err := l.Flush(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Since: q.Since.UTC(), Until: q.Until.UTC(), By: q.By, Currency: l.Currency(), Groups: []Group{}}
	if rep.By == nil {
		rep.By = []string{}
	}
	groups := map[string]*Group{}
	key := make([]string, len(q.By))
	err := l.store.Scan(ctx, dayOf(q.Since), dayOf(q.Until.Add(-time.Nanosecond)), func(r *Record) bool {
		if !q.match(r) {
			return true
		}
		rep.Total.Add(r)
		if len(q.By) == 0 {
			return true
		}
		for i, b := range q.By {
			key[i] = r.dim(b)
		}
		k := strings.Join(key, "\x00")
		g := groups[k]
		if g == nil {
			g = &Group{Key: make(map[string]string, len(q.By))}
			for i, b := range q.By {
				g.Key[b] = key[i]
			}
			groups[k] = g
		}
		g.Add(r)
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		rep.Groups = append(rep.Groups, *g)
	}
	slices.SortFunc(rep.Groups, func(a, b Group) int {
		if c := cmp.Compare(b.Cost, a.Cost); c != 0 {
			return c
		}
		if c := cmp.Compare(b.TotalTokens, a.TotalTokens); c != 0 {
			return c
		}
		return cmp.Compare(groupKey(a, q.By), groupKey(b, q.By))
	})
	if q.Limit > 0 && len(rep.Groups) > q.Limit {
		rep.More = len(rep.Groups) - q.Limit
		rep.Groups = rep.Groups[:q.Limit]
	}
	return rep, nil
}

func groupKey(g Group, by []string) string {
	parts := make([]string, len(by))
	for i, b := range by {
		parts[i] = g.Key[b]
	}
	return strings.Join(parts, "\x00")
}

// ParseTime reads a time bound: RFC 3339 ("2026-11-27T10:00:00Z"), a UTC
// day ("2026-11-27", its midnight), or an age before now ("7d", "36h",
// "90m"), so that since=7d is the last seven days.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := ParseAge(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want a time (2026-11-27T10:00:00Z), a day (2026-11-27) or an age (7d, 36h)", s)
}

// ParseAge reads a duration that may also be counted in days ("7d").
func ParseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 7d or 36h", s)
	}
	return d, nil
}
