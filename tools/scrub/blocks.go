package scrub

import "strings"

const pemBegin = "-----BEGIN "

// pemBlock redacts the body of a PEM private key block starting at
// text[p], keeping the BEGIN and END lines so the reader still knows a key
// was there. Certificates and public keys are left alone. A block with no
// END line (output cut short) is redacted to the end of the text: every
// line after BEGIN may be key material.
func pemBlock(text string, p int) (sp span, ok bool, next int) {
	next = p + 1
	if !strings.HasPrefix(text[p:], pemBegin) {
		return
	}
	labelStart := p + len(pemBegin)
	eol := lineEnd(text, labelStart)
	label := text[labelStart:eol]
	bodyStart := eol
	if i := strings.Index(label, "-----"); i >= 0 {
		label = label[:i]
		bodyStart = labelStart + i + len("-----")
	}
	// "RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PGP PRIVATE KEY BLOCK", ...
	if !strings.Contains(label, "PRIVATE") {
		return
	}
	bodyStart = skipNewline(text, bodyStart)
	bodyEnd := len(text)
	if i := strings.Index(text[bodyStart:], "-----END "); i >= 0 {
		bodyEnd = bodyStart + i
		if bodyEnd > bodyStart && text[bodyEnd-1] == '\n' {
			bodyEnd--
			if bodyEnd > bodyStart && text[bodyEnd-1] == '\r' {
				bodyEnd--
			}
		}
	}
	if bodyEnd <= bodyStart || text[bodyStart:bodyEnd] == Redacted {
		return span{}, false, max(bodyEnd, next)
	}
	return span{bodyStart, bodyEnd}, true, bodyEnd
}

func skipNewline(text string, i int) int {
	if i < len(text) && text[i] == '\r' {
		i++
	}
	if i < len(text) && text[i] == '\n' {
		i++
	}
	return i
}

// urlPassword redacts the password of a URL's user info, as in
// postgres://user:password@host/db, for any scheme: database, broker and
// cache connection strings, and also git remotes carrying a token. The
// colon at text[p] must start "://". A user name alone is kept (ssh://git@),
// and so are documentation placeholders (user:password@, user:${PASS}@).
func urlPassword(text string, p int) (span, bool) {
	if !strings.HasPrefix(text[p:], "://") || p == 0 || !isSchemeByte(text[p-1]) {
		return span{}, false
	}
	authStart := p + 3
	authEnd := authStart
	for authEnd < len(text) && !authorityStop[text[authEnd]] {
		authEnd++
	}
	at := strings.LastIndexByte(text[authStart:authEnd], '@')
	if at < 0 {
		return span{}, false
	}
	userinfo := text[authStart : authStart+at]
	colon := strings.IndexByte(userinfo, ':')
	if colon < 0 {
		return span{}, false
	}
	pw := userinfo[colon+1:]
	if pw == "" || isMasked(pw) || isPlaceholder(pw) || isTypeWord(pw) {
		return span{}, false
	}
	start := authStart + colon + 1
	return span{start, start + len(pw)}, true
}

func isSchemeByte(c byte) bool {
	return isAlnum(c) || c == '+' || c == '.' || c == '-'
}

// authorityStop ends the authority part of a URL; it also stops at quotes
// and brackets so that a URL embedded in JSON or Markdown ends where the
// URL does.
var authorityStop = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\n/?#\"'`<>()[]{}\\|,;") {
		t[c] = true
	}
	return t
}()
