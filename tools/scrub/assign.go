package scrub

import "strings"

// Assignments: a secret-sounding name (names.go), a separator, and a value.
// Covered forms include env files and dumps (DB_PASSWORD=x, export X=y),
// YAML and HTTP headers (password: x, X-Api-Key: y), JSON and Python dicts
// ("password": "x", 'DB_PASS': 'y'), URL queries (?access_token=x&...),
// connection-string fields (Password=x;), flags (--password=x) and string
// literals in code (token := "x").
//
// The value rules are what keep ordinary code readable: a value that is an
// expression (a call, an index, a member access such as cfg.Password), a
// variable passed on (Token: token), a type (password: string) or a
// literal (true, null) is not a secret, and redacting it would make the
// model misread and then mis-edit the code.

// minValueLen is the shortest value taken as a secret: shorter ones are
// examples and flags (password: x, token=1), and would hide little anyway.
const minValueLen = 3

// compoundBefore are bytes that turn '=' into an operator (==, !=, <=,
// +=, :=, ...) rather than an assignment of a value.
var compoundBefore = charset("=!<>+*/%&|^~?:-")

// valueStop ends an unquoted value.
var valueStop = charset(" \t\r\n,;&\"'`)]}<>")

// assignment examines the separator at text[p], ':' or '='. next is where
// scanning resumes.
func assignment(text string, p int) (sp span, ok bool, next int) {
	n := len(text)
	next = p + 1
	sepEnd := p + 1
	if text[p] == ':' {
		if p+1 < n && text[p+1] == ':' || p > 0 && text[p-1] == ':' {
			return // C++ and Rust paths
		}
		if p+1 < n && text[p+1] == '=' {
			sepEnd = p + 2 // Go's :=
		}
	} else {
		if p > 0 && compoundBefore[text[p-1]] || p+1 < n && (text[p+1] == '=' || text[p+1] == '>') {
			return
		}
	}
	key, keyStart, spacedBefore := keyBefore(text, p)
	kind := classifyKey(key)
	if kind == notSecret {
		return
	}
	v := sepEnd
	for v < n && (text[v] == ' ' || text[v] == '\t') {
		v++
	}
	spacedAfter := v > sepEnd
	if v >= n || text[v] == '\n' || text[v] == '\r' {
		return // a nested YAML mapping or an empty value
	}
	if q := text[v]; q == '"' || q == '\'' || q == '`' {
		start, end := v+1, closingQuote(text, v+1, q)
		if kind == headerValue {
			start = skipAuthScheme(text, start, end)
		}
		val := text[start:end]
		if len(val) < minValueLen || isMasked(val) || isPlaceholder(val) || kind != headerValue && !quotedSecret(key, val) {
			return // the token detectors still look at the value
		}
		return span{start, end}, true, end
	}
	eol := lineEnd(text, v)
	envStyle := text[p] == '=' && !spacedBefore && !spacedAfter && envLine(text, keyStart)
	if kind == headerValue || envStyle {
		end := eol
		if kind == headerValue && keyStart > 0 {
			// -H "Authorization: Basic x" ends at the quote that
			// opened the header.
			if q := text[keyStart-1]; q == '"' || q == '\'' || q == '`' {
				if i := strings.IndexByte(text[v:eol], q); i >= 0 {
					end = v + i
				}
			}
		}
		for end > v && (text[end-1] == ' ' || text[end-1] == '\t' || text[end-1] == '\r') {
			end--
		}
		if kind == headerValue {
			v = skipAuthScheme(text, v, end)
		}
		val := text[v:end]
		if len(val) < minValueLen || isMasked(val) || isPlaceholder(val) {
			return
		}
		return span{v, end}, true, end
	}
	end := v
	for end < eol && !valueStop[text[end]] {
		end++
	}
	var term byte
	if end < n {
		term = text[end]
	}
	if !unquotedSecret(key, text[v:end], spacedBefore || spacedAfter, term) {
		return
	}
	return span{v, end}, true, end
}

// authSchemes name the kind of credential in an Authorization header;
// keeping the word tells the reader what was there.
var authSchemes = []string{"Bearer", "Basic", "Token", "Digest", "Negotiate", "ApiKey", "AWS4-HMAC-SHA256"}

// skipAuthScheme returns the start of the credential after a scheme word.
func skipAuthScheme(text string, v, end int) int {
	for _, s := range authSchemes {
		if w := v + len(s); w < end && (text[w] == ' ' || text[w] == '\t') && strings.EqualFold(text[v:w], s) {
			for w < end && (text[w] == ' ' || text[w] == '\t') {
				w++
			}
			return w
		}
	}
	return v
}

// keyBefore returns the name before the separator at text[p]: a quoted
// string ("password": ...) or a run of name bytes (DB_PASSWORD=...).
func keyBefore(text string, p int) (key string, start int, spaced bool) {
	k := p
	for k > 0 && (text[k-1] == ' ' || text[k-1] == '\t') {
		k--
	}
	spaced = k < p
	if k > 0 && (text[k-1] == '"' || text[k-1] == '\'') {
		q := text[k-1]
		lo := max(0, k-2-maxKeyLen)
		open := strings.LastIndexByte(text[lo:k-1], q)
		if open < 0 {
			return "", k, spaced
		}
		open += lo
		key = text[open+1 : k-1]
		if strings.IndexByte(key, '\n') >= 0 {
			return "", k, spaced
		}
		return key, open, spaced
	}
	j := k
	for j > 0 && k-j < maxKeyLen && keyByte[text[j-1]] {
		j--
	}
	return text[j:k], j, spaced
}

// closingQuote returns the index of the quote closing a string that starts
// at i, honouring backslash escapes, or the end of the line when the string
// is not closed on it (output cut short).
func closingQuote(text string, i int, q byte) int {
	for ; i < len(text); i++ {
		switch text[i] {
		case '\\':
			if q != '`' {
				i++
			}
		case q:
			return i
		case '\n':
			if q != '`' {
				return i
			}
		}
	}
	return len(text)
}

// envLine reports whether the name at keyStart begins its line, as in env
// files, printenv output, `export X=...` and Dockerfile ENV, also behind
// the line prefixes of the file tools (read's "  12\t", grep's "path:12: ").
// There the value runs to the end of the line, spaces included.
func envLine(text string, keyStart int) bool {
	ls := strings.LastIndexByte(text[:keyStart], '\n') + 1
	prefix := strings.TrimSpace(text[ls:keyStart])
	for _, kw := range []string{"export", "declare -x", "set", "setenv", "-", "ENV", "env"} {
		if rest, ok := strings.CutSuffix(prefix, kw); ok && (rest == "" || rest[len(rest)-1] == ' ' || rest[len(rest)-1] == '\t') {
			prefix = strings.TrimSpace(rest)
			break
		}
	}
	return prefix == "" || isLinePrefix(prefix)
}

// isLinePrefix reports a line number ("12", "12:") or a grep location
// ("path:12:", "path-12-").
func isLinePrefix(p string) bool {
	if p[len(p)-1] == ':' || p[len(p)-1] == '-' {
		p = p[:len(p)-1]
	}
	i := len(p)
	for i > 0 && p[i-1] >= '0' && p[i-1] <= '9' {
		i--
	}
	if i == len(p) {
		return false // no number
	}
	return i == 0 || p[i-1] == ':' || p[i-1] == '-'
}

// quotedSecret decides for a quoted value. Most are secrets; the exceptions
// are UI labels ("password": "Enter your password"), type names and
// template placeholders.
func quotedSecret(key, val string) bool {
	if isPlaceholder(val) || strings.EqualFold(val, key) || isTypeWord(val) {
		return false
	}
	return !isProse(val)
}

// unquotedSecret decides for an unquoted value.
func unquotedSecret(key, val string, spaced bool, term byte) bool {
	switch {
	case len(val) < minValueLen, isMasked(val), isPlaceholder(val):
		return false
	case strings.ContainsAny(val, "([{"):
		return false // a call or an index expression
	case isTypeWord(val):
		return false
	case isMemberPath(val):
		return false // cfg.Password, self.token
	case strings.EqualFold(val, key):
		return false // password=password: passing a variable on
	case spaced && isLettersOnly(val):
		return false // token = tok, password: string
	case !spaced && (term == ',' || term == ')') && isIdentifier(val):
		return false // connect(password=pw, ...)
	}
	return true
}

// typeWords are values that name a type or a literal, not a secret.
var typeWords = set("string", "str", "text", "bool", "boolean", "number",
	"int", "integer", "password", "secret", "token", "key", "required",
	"optional", "hidden", "none", "null", "nil", "true", "false",
	"undefined", "any", "object", "yes", "no", "on", "off")

func isTypeWord(v string) bool {
	v = strings.TrimRight(v, ".,:;")
	var buf [16]byte
	return len(v) <= len(buf) && typeWords[string(lower(buf[:0], v))]
}

// isPlaceholder reports template references that stand for a secret kept
// elsewhere: $VAR, ${VAR}, $(cmd), {{ .Values.x }}, <your-token>, %s.
func isPlaceholder(v string) bool {
	switch {
	case len(v) >= 2 && v[0] == '$' && isIdentifier(v[1:]):
		return true
	case strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") && !strings.Contains(v[2:len(v)-1], "}"),
		strings.HasPrefix(v, "$(") && strings.HasSuffix(v, ")"),
		strings.HasPrefix(v, "{{") && strings.HasSuffix(v, "}}"),
		strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">") && !strings.ContainsAny(v[1:len(v)-1], "<>"),
		len(v) == 2 && v[0] == '%':
		return true
	}
	return false
}

func isIdentifier(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

func isLettersOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isUpper(c) && !isLower(c) && c != '_' {
			return false
		}
	}
	return true
}

// isMemberPath reports a dotted chain of identifiers such as cfg.DB.Password,
// optionally behind & or * (Go pointers). Digits are not allowed: member
// names rarely have them, while dotted tokens (ya29.a0Af...) do.
func isMemberPath(s string) bool {
	s = strings.TrimLeft(s, "&*!")
	if !strings.Contains(s, ".") {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if !isIdentifier(part) || strings.ContainsAny(part, "0123456789") {
			return false
		}
	}
	return true
}

// isProse reports text made of words: letters (any script), spaces and
// sentence punctuation, with no digits or symbols, and at least two words.
func isProse(s string) bool {
	if !strings.ContainsAny(s, " \t") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || isUpper(c) || isLower(c) || strings.IndexByte(" \t.,!?'-:;()", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
