package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

const keysUsage = `Usage: ruleagent keys COMMAND [flags]

Per-user API keys, for a server started with --auth keys: a request with
"Authorization: Bearer <key>" is that user's, and can act only as them.

Commands:
  create --user U [--name N] [--role operator] [--expires 30d] [--json]
                                        make a key for user U (printed once: only its hash is kept);
                                        --role operator lets it administer the server like --token;
                                        --expires: an age (30d, 12h) or a time (2027-01-31, RFC 3339)
  list [--json]                         the keys: id, user, name, role, created, expiry and last use
                                        (to the minute; never the keys themselves)
  revoke ID                             remove a key: requests with it are refused at once

Where the keys are:
  --server URL [--token T]         a running server's API, with its operator token (RULEAGENT_TOKEN)
  --data DIR --session-store SPEC  the store itself (default: bolt under ./data), when no server holds it
`

// keySource is where `ruleagent keys` manages keys: a running server's
// API, or the store itself.
type keySource interface {
	create(ctx context.Context, spec identity.KeySpec) (key string, k sessions.APIKey, err error)
	list(ctx context.Context) ([]sessions.APIKey, error)
	revoke(ctx context.Context, id string) error
	close()
}

func runKeys(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, keysUsage)
		if len(args) == 0 {
			return usagef("keys needs a command: create, list or revoke")
		}
		return nil
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("keys "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, keysUsage) }
	srv := fs.String("server", "", "a running server, e.g. http://127.0.0.1:8080")
	token := fs.String("token", os.Getenv("RULEAGENT_TOKEN"), "the server's operator token")
	data := fs.String("data", "data", "the data folder of the bolt store")
	spec := fs.String("session-store", "bolt", "bolt, bolt:PATH or redis://host:port/db")
	user := fs.String("user", "", "create: the user the key is for")
	name := fs.String("name", "", "create: a note on what the key is for")
	role := fs.String("role", "", "create: a role the key grants (operator), none by default")
	expires := fs.String("expires", "", "create: when the key stops working: an age (30d, 12h) or a time (2027-01-31, RFC 3339); never by default")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, rest := positionals(args)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	pos = append(pos, fs.Args()...)
	want := map[string]int{"create": 0, "list": 0, "revoke": 1}
	n, ok := want[cmd]
	switch {
	case !ok:
		return usagef("keys: unknown command %q (create, list, revoke)", cmd)
	case len(pos) != n:
		return usagef("keys %s takes %d argument(s), got %d", cmd, n, len(pos))
	case cmd == "create" && *user == "":
		return usagef("keys create needs --user: the user the key is for")
	}
	made := identity.KeySpec{User: *user, Name: *name, Role: *role}
	if *expires != "" {
		t, err := parseExpiry(*expires, time.Now())
		if err != nil {
			return usagef("--expires: %v", err)
		}
		made.Expires = t
	}
	src, err := openKeySource(ctx, *srv, *token, *spec, *data)
	if err != nil {
		return err
	}
	defer src.close()
	switch cmd {
	case "create":
		key, k, err := src.create(ctx, made)
		if err != nil {
			return err
		}
		if *asJSON {
			out := keyJSON(k)
			out["key"] = key
			return printJSON(stdout, out)
		}
		fmt.Fprintln(stdout, key)
		what := fmt.Sprintf("key %s for user %q", k.ID, k.User)
		if k.Role != "" {
			what += ", role " + k.Role
		}
		if !k.Expires.IsZero() {
			what += ", expires " + k.Expires.Local().Format(time.DateTime)
		}
		fmt.Fprintf(stderr, "%s: shown once, keep it secret (requests send it as Authorization: Bearer <key>)\n", what)
		return nil
	case "list":
		keys, err := src.list(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			out := make([]map[string]any, 0, len(keys))
			for _, k := range keys {
				out = append(out, keyJSON(k))
			}
			return printJSON(stdout, out)
		}
		now := time.Now()
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tUSER\tNAME\tROLE\tCREATED\tEXPIRES\tLAST USED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.User, dash(k.Name), dash(k.Role), k.Created.Local().Format(time.DateTime),
				expiry(k.Expires, now), when(k.LastUsed, "never"))
		}
		return tw.Flush()
	default:
		if err := src.revoke(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked key %s\n", pos[0])
		return nil
	}
}

// openKeySource picks the source the flags name: --server, else the store
// of --session-store under --data.
func openKeySource(ctx context.Context, server, token, spec, data string) (keySource, error) {
	if server != "" {
		if !strings.Contains(server, "://") {
			server = "http://" + server
		}
		return apiKeys{apiSource{base: strings.TrimRight(server, "/"), token: token, hc: &http.Client{Timeout: time.Minute}}}, nil
	}
	st, err := sessions.Open(ctx, spec, data)
	if errors.Is(err, sessions.ErrLocked) {
		return nil, fmt.Errorf("%w\n(a server holds the store: add --server http://ADDR --token T, e.g. --server 127.0.0.1:8080)", err)
	}
	if err != nil {
		return nil, err
	}
	ks, ok := st.(sessions.KeyStore)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("the %s store keeps no API keys", st.Name())
	}
	return storeKeys{st: st, keys: ks}, nil
}

// storeKeys works on the store directly.
type storeKeys struct {
	st   sessions.Store
	keys sessions.KeyStore
}

func (s storeKeys) create(ctx context.Context, spec identity.KeySpec) (string, sessions.APIKey, error) {
	key, k, err := identity.IssueKey(spec, time.Now())
	if err != nil {
		return "", k, err
	}
	return key, k, s.keys.PutKey(ctx, k)
}

func (s storeKeys) list(ctx context.Context) ([]sessions.APIKey, error) { return s.keys.ListKeys(ctx) }

func (s storeKeys) revoke(ctx context.Context, id string) error { return s.keys.DeleteKey(ctx, id) }

func (s storeKeys) close() { s.st.Close() }

// apiKeys works through a server's /api/v1/keys routes.
type apiKeys struct{ a apiSource }

func (a apiKeys) create(ctx context.Context, spec identity.KeySpec) (string, sessions.APIKey, error) {
	var out struct {
		sessions.APIKey
		Key string `json:"key"`
	}
	body := map[string]any{"user": spec.User, "name": spec.Name}
	if spec.Role != "" {
		body["role"] = spec.Role
	}
	if !spec.Expires.IsZero() {
		body["expires"] = spec.Expires.UTC()
	}
	err := a.a.do(ctx, "POST", "/api/v1/keys", body, &out)
	return out.Key, out.APIKey, err
}

func (a apiKeys) list(ctx context.Context) ([]sessions.APIKey, error) {
	var out []sessions.APIKey
	err := a.a.do(ctx, "GET", "/api/v1/keys", nil, &out)
	return out, err
}

func (a apiKeys) revoke(ctx context.Context, id string) error {
	err := a.a.do(ctx, "DELETE", "/api/v1/keys/"+url.PathEscape(id), nil, nil)
	if errors.Is(err, sessions.ErrNotFound) {
		return fmt.Errorf("%w: %s", sessions.ErrNoKey, id)
	}
	return err
}

func (a apiKeys) close() {}

// parseExpiry reads --expires: an age from now (30d, 12h), or a time
// (RFC 3339) or a day (its midnight, UTC).
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := ledger.ParseAge(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q: an age must be more than nothing", s)
		}
		return now.Add(d), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want an age (30d, 12h) or a time (2027-01-31, 2027-01-31T12:00:00Z)", s)
}

// keyJSON is a key in JSON lists: never its hash.
func keyJSON(k sessions.APIKey) map[string]any {
	out := map[string]any{"id": k.ID, "user": k.User, "name": k.Name, "created": k.Created}
	if k.Role != "" {
		out["role"] = k.Role
	}
	if !k.Expires.IsZero() {
		out["expires"] = k.Expires
	}
	if !k.LastUsed.IsZero() {
		out["lastUsed"] = k.LastUsed
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when is t in local time to the minute, or none when t is zero.
func when(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.Local().Format("2006-01-02 15:04")
}

// expiry says when a key expires, or that it has.
func expiry(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "never"
	case !now.Before(t):
		return "expired " + when(t, "")
	}
	return when(t, "")
}
