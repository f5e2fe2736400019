package scrub

import (
	"bytes"
	"strings"
)

// Names that say their value is secret. A name is split into words at
// separators and camelCase boundaries (DB_PASSWORD, dbPassword,
// db.password, x-api-key); what matters is the last word, because that is
// what the value is: TOKEN_URL is a URL and max_tokens a number, while
// GITHUB_TOKEN is a token.

type keyKind uint8

const (
	notSecret   keyKind = iota
	secretValue         // redact the value
	headerValue         // redact to the end of the header (Authorization: Basic ...)
)

const maxKeyLen = 128

// keyByte is what an unquoted name is made of.
var keyByte = charset("a-z", "A-Z", "0-9", "_.-")

var (
	// suffixWords also count at the end of a longer word (clientsecret,
	// accesstoken, dbpassword).
	suffixWords = [][]byte{[]byte("secret"), []byte("password"), []byte("passwd"),
		[]byte("passphrase"), []byte("apikey"), []byte("privatekey"),
		[]byte("secretkey"), []byte("accesskey"), []byte("token")}
	// negating words before the last word make the name a flag or a count
	// about the secret (has_password, max_token, show_secret).
	negating = set("is", "has", "use", "no", "enable", "enabled", "disable",
		"disabled", "show", "hide", "require", "required", "min", "max",
		"num", "total", "count")
	// keyNonSecret words before "key" name keys that are identifiers, not
	// credentials (primary_key, sort_key, public_key).
	keyNonSecret = set("primary", "foreign", "sort", "partition", "cache",
		"map", "hash", "row", "unique", "composite", "lookup", "idempotency",
		"public", "pub", "object", "group", "index", "shard", "routing",
		"range", "message", "label", "translation", "i18n", "field",
		"column", "s3", "dedup", "dedupe", "hot", "cursor", "next", "prefix",
		"sub", "list", "dict", "item", "entry", "node", "metric", "order",
		"join", "react")
	// tokenNonSecret words before "token" name language-model and parser
	// tokens or pagination cursors (max_tokens is caught by "tokens" not
	// being a secret word; eos_token, next_token, prompt_token here).
	tokenNonSecret = set("input", "output", "prompt", "completion", "next",
		"page", "continuation", "cancellation", "cancel", "sync", "eos",
		"bos", "pad", "unk", "sep", "mask", "cls", "special", "start", "end",
		"stop", "bad", "last", "first", "lexer", "parse", "parser", "pagination")
	headerNames = []string{"authorization", "proxy-authorization", "cookie", "set-cookie"}
)

// isSecretWord reports last words that make a name secret. A switch on
// the bytes compiles to a few comparisons, without hashing or allocating.
func isSecretWord(w []byte) bool {
	switch string(w) {
	case "secret", "password", "passwd", "passphrase", "pass", "credential",
		"credentials", "apikey", "privatekey", "secretkey", "accesskey", "dsn",
		"token", "key", "pw", "pwd":
		return true
	}
	return false
}

// isModifier reports words that say how a secret is encoded, not what it
// is: SECRET_KEY_BASE and password_hash are still secrets.
func isModifier(w []byte) bool {
	switch string(w) {
	case "base", "value", "val", "string", "str", "data", "b64", "base64",
		"hex", "raw", "plain", "plaintext", "text", "enc", "encrypted", "hash",
		"hashed", "content", "contents", "literal":
		return true
	}
	return false
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// lastWord returns the last word of key, lower-cased into buf: the run of
// letters and digits at its end, cut at a camelCase boundary. It is the
// cheap first test of classifyKey.
func lastWord(buf []byte, key string) []byte {
	start := len(key)
	for start > 0 && isAlnum(key[start-1]) {
		start--
		if isUpper(key[start]) && start+1 < len(key) && isLower(key[start+1]) {
			break // dbPassword: stop at the P
		}
	}
	if len(key)-start > cap(buf) {
		return buf[:0]
	}
	return lower(buf[:0], key[start:])
}

// mayBeSecret is the quick test: could a name ending in word w be secret?
// It answers true for every word the full rules accept.
func mayBeSecret(w []byte) bool {
	if isModifier(w) {
		return true
	}
	for len(w) > 0 && w[len(w)-1] >= '0' && w[len(w)-1] <= '9' {
		w = w[:len(w)-1]
	}
	if len(w) < 2 {
		return false
	}
	if isSecretWord(w) || string(w) == "authorization" || string(w) == "cookie" {
		return true
	}
	switch w[len(w)-1] { // the last letters of suffixWords
	case 't', 'd', 'e', 'y', 'n':
		for _, suf := range suffixWords {
			if bytes.HasSuffix(w, suf) {
				return true
			}
		}
	}
	return false
}

// classifyKey says whether the value assigned to key is a secret.
func classifyKey(key string) keyKind {
	if len(key) == 0 || len(key) > maxKeyLen {
		return notSecret
	}
	var quick [24]byte
	if !mayBeSecret(lastWord(quick[:], key)) {
		return notSecret
	}
	switch len(key) {
	case len("cookie"), len("set-cookie"), len("authorization"), len("proxy-authorization"):
		for _, h := range headerNames {
			if strings.EqualFold(key, h) {
				return headerValue
			}
		}
	}
	var words [8]string
	n := splitWords(key, &words)
	for n > 0 && trimDigits(words[n-1]) == "" {
		n--
	}
	var lastBuf, prevBuf [maxKeyLen]byte
	for d := 0; d < 2 && n > 1 && isModifier(lower(lastBuf[:0], words[n-1])); d++ {
		n--
	}
	if n == 0 {
		return notSecret
	}
	last := lower(lastBuf[:0], trimDigits(words[n-1]))
	var prev []byte
	if n > 1 {
		prev = lower(prevBuf[:0], words[n-2])
	}
	if negating[string(prev)] {
		return notSecret
	}
	if isSecretWord(last) {
		switch string(last) {
		case "pw", "pwd":
			// PWD and OLDPWD are the working directory.
			if n == 1 {
				return notSecret
			}
		case "token":
			if tokenNonSecret[string(prev)] {
				return notSecret
			}
		case "key":
			if n == 1 {
				// "key" alone is a lookup key in most formats; only
				// the shouting env var KEY=... is taken as secret.
				if key == "KEY" {
					return secretValue
				}
				return notSecret
			}
			if keyNonSecret[string(prev)] {
				return notSecret
			}
		}
		return secretValue
	}
	for _, suf := range suffixWords {
		if len(last) > len(suf) && bytes.HasSuffix(last, suf) {
			if head := last[:len(last)-len(suf)]; tokenNonSecret[string(head)] || negating[string(head)] {
				return notSecret
			}
			return secretValue
		}
	}
	return notSecret
}

// splitWords splits key at non-alphanumeric bytes and camelCase
// boundaries, keeping the last len(out) words in order.
func splitWords(key string, out *[8]string) int {
	n := 0
	push := func(w string) {
		if n == len(out) {
			copy(out[:], out[1:])
			n--
		}
		out[n] = w
		n++
	}
	start := -1
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !isAlnum(c) {
			if start >= 0 {
				push(key[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := key[i-1]
		boundary := isUpper(c) && !isUpper(prev) || // dbPassword
			isUpper(c) && isUpper(prev) && i+1 < len(key) && isLower(key[i+1]) // APIKey
		if boundary {
			push(key[start:i])
			start = i
		}
	}
	if start >= 0 {
		push(key[start:])
	}
	return n
}

func trimDigits(s string) string {
	for len(s) > 0 && s[len(s)-1] >= '0' && s[len(s)-1] <= '9' {
		s = s[:len(s)-1]
	}
	return s
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

func lower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUpper(c) {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// IsSecretName reports whether a variable or key named name holds a
// secret by its name (DB_PASSWORD, OPENAI_API_KEY, clientSecret, ...), by
// the same rules the scrubber applies to assignments.
func IsSecretName(name string) bool { return classifyKey(name) != notSecret }
