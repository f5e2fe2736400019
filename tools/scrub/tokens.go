package scrub

import "strings"

// family is a credential format recognised by its fixed prefix.
type family struct {
	name   string
	prefix string
	body   *[256]bool // bytes allowed after the prefix
	min    int        // shortest body
	max    int        // longest body; 0 means no limit
	// random requires the body to look random (see looksRandom), which
	// keeps kebab-case words such as "sk-learn-..." out.
	random bool
	// keep keeps the prefix and redacts only the body, for prefixes that
	// are a useful, non-secret context such as a webhook host.
	keep bool
}

func charset(ranges ...string) *[256]bool {
	var t [256]bool
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for c := int(r[0]); c <= int(r[2]); c++ {
				t[c] = true
			}
			continue
		}
		for i := 0; i < len(r); i++ {
			t[r[i]] = true
		}
	}
	return &t
}

var (
	alnum     = charset("a-z", "A-Z", "0-9")
	upperNum  = charset("A-Z", "0-9")
	alpha     = charset("a-z", "A-Z")
	alnumU    = charset("a-z", "A-Z", "0-9", "_")
	base64url = charset("a-z", "A-Z", "0-9", "_", "-")
	slackBody = charset("a-z", "A-Z", "0-9", "-")
	pathBody  = charset("a-z", "A-Z", "0-9", "/", "_", "-")
	whsecBody = charset("a-z", "A-Z", "0-9", "+/=")
	// bearerBody is RFC 6750's b64token alphabet.
	bearerBody = charset("a-z", "A-Z", "0-9", "-._~+/")
)

// families lists the prefixed token formats. A body shorter than min is
// not a credential (it is a name that happens to share the prefix).
var families = []family{
	{name: "OpenAI, Anthropic and other sk- API keys", prefix: "sk-", body: base64url, min: 20, random: true},
	{name: "Stripe secret key", prefix: "sk_live_", body: alnum, min: 16},
	{name: "Stripe test secret key", prefix: "sk_test_", body: alnum, min: 16},
	{name: "Stripe restricted key", prefix: "rk_live_", body: alnum, min: 16},
	{name: "Stripe test restricted key", prefix: "rk_test_", body: alnum, min: 16},
	{name: "Stripe webhook secret", prefix: "whsec_", body: whsecBody, min: 20},
	{name: "GitHub personal access token", prefix: "ghp_", body: alnum, min: 30},
	{name: "GitHub OAuth token", prefix: "gho_", body: alnum, min: 30},
	{name: "GitHub user-to-server token", prefix: "ghu_", body: alnum, min: 30},
	{name: "GitHub server-to-server token", prefix: "ghs_", body: alnum, min: 30},
	{name: "GitHub refresh token", prefix: "ghr_", body: alnum, min: 30},
	{name: "GitHub fine-grained token", prefix: "github_pat_", body: alnumU, min: 20},
	{name: "GitLab personal access token", prefix: "glpat-", body: base64url, min: 20},
	{name: "Slack bot token", prefix: "xoxb-", body: slackBody, min: 10, random: true},
	{name: "Slack user token", prefix: "xoxp-", body: slackBody, min: 10, random: true},
	{name: "Slack app token (legacy)", prefix: "xoxa-", body: slackBody, min: 10, random: true},
	{name: "Slack refresh token", prefix: "xoxr-", body: slackBody, min: 10, random: true},
	{name: "Slack session token", prefix: "xoxs-", body: slackBody, min: 10, random: true},
	{name: "Slack config token", prefix: "xoxe-", body: slackBody, min: 10, random: true},
	{name: "Slack app-level token", prefix: "xapp-", body: slackBody, min: 10, random: true},
	{name: "Slack webhook", prefix: "hooks.slack.com/services/", body: pathBody, min: 20, keep: true},
	{name: "Discord webhook", prefix: "discord.com/api/webhooks/", body: pathBody, min: 20, keep: true},
	{name: "Discord webhook", prefix: "discordapp.com/api/webhooks/", body: pathBody, min: 20, keep: true},
	{name: "AWS access key id", prefix: "AKIA", body: upperNum, min: 16, max: 16},
	{name: "AWS temporary access key id", prefix: "ASIA", body: upperNum, min: 16, max: 16},
	{name: "Google API key", prefix: "AIza", body: base64url, min: 30},
	{name: "Google OAuth access token", prefix: "ya29.", body: base64url, min: 20},
	{name: "npm token", prefix: "npm_", body: alnum, min: 30},
	{name: "Hugging Face token", prefix: "hf_", body: alpha, min: 30, random: true},
	{name: "PyPI token", prefix: "pypi-AgE", body: base64url, min: 40},
}

// byFirst indexes families by the first byte of their prefix.
var byFirst = func() (t [256][]family) {
	for _, f := range families {
		t[f.prefix[0]] = append(t[f.prefix[0]], f)
	}
	return t
}()

// startPairs is a bit set of the first two bytes of every prefix a word
// detector looks for. The scanner tests it before calling wordSecret, so
// most words cost one table lookup.
var startPairs = func() (t [256][4]uint64) {
	add := func(prefix string) {
		a, b := prefix[0], prefix[1]
		t[a][b>>6] |= 1 << (b & 63)
	}
	for _, f := range families {
		add(f.prefix)
	}
	for _, p := range []string{"eyJ", "be", "bE", "Be", "BE"} { // JWT, bearer
		add(p)
	}
	return t
}()

func mayStartSecret(a, b byte) bool { return startPairs[a][b>>6]&(1<<(b&63)) != 0 }

// wordSecret checks for a secret starting at text[start], the first byte of
// a word that ends at wordEnd.
func wordSecret(text string, start, wordEnd int) (span, bool) {
	rest := text[start:]
	for _, f := range byFirst[text[start]] {
		if !strings.HasPrefix(rest, f.prefix) {
			continue
		}
		if sp, ok := prefixedToken(text, start, f); ok {
			return sp, true
		}
	}
	switch text[start] {
	case 'e':
		return jwt(text, start)
	case 'b', 'B':
		if wordEnd-start == len("bearer") && strings.EqualFold(text[start:wordEnd], "bearer") {
			return bearer(text, wordEnd)
		}
	}
	return span{}, false
}

func prefixedToken(text string, start int, f family) (span, bool) {
	bodyStart := start + len(f.prefix)
	end := bodyStart
	for end < len(text) && f.body[text[end]] {
		end++
	}
	n := end - bodyStart
	if n < f.min || f.max > 0 && n > f.max {
		return span{}, false
	}
	// A fixed-length body (AWS key ids) must not run on into more
	// letters: that would be a longer word that merely contains it.
	if f.max > 0 && end < len(text) && isAlnum(text[end]) {
		return span{}, false
	}
	if f.random && !looksRandom(text[bodyStart:end]) {
		return span{}, false
	}
	if f.keep {
		return span{bodyStart, end}, true
	}
	return span{start, end}, true
}

// jwt matches three or more base64url segments separated by dots, the
// first starting "eyJ" (the encoding of `{"`). The signature may be empty
// (unsigned tokens), but both dots must be there.
func jwt(text string, start int) (span, bool) {
	if !strings.HasPrefix(text[start:], "eyJ") {
		return span{}, false
	}
	seg := func(i int) int {
		for i < len(text) && base64url[text[i]] {
			i++
		}
		return i
	}
	end := seg(start)
	if end-start < 10 || end >= len(text) || text[end] != '.' {
		return span{}, false
	}
	payloadEnd := seg(end + 1)
	if payloadEnd-(end+1) < 2 || payloadEnd >= len(text) || text[payloadEnd] != '.' {
		return span{}, false
	}
	end = seg(payloadEnd + 1)
	// Encrypted tokens (JWE) have five segments.
	for end < len(text) && text[end] == '.' && end+1 < len(text) && base64url[text[end+1]] {
		end = seg(end + 1)
	}
	return span{start, end}, true
}

// bearer redacts the credential after the word "Bearer", keeping the word.
func bearer(text string, i int) (span, bool) {
	j := i
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	if j == i {
		return span{}, false
	}
	end := j
	for end < len(text) && bearerBody[text[end]] {
		end++
	}
	for end < len(text) && text[end] == '=' {
		end++
	}
	tok := text[j:end]
	if len(tok) < 8 || !looksRandom(tok) {
		return span{}, false
	}
	return span{j, end}, true
}
