package web

import (
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/ruleagent/ruleagent/tools/textfile"
)

// Kinds of content, by how the tool shows them.
const (
	kindHTML   = "html"
	kindJSON   = "json"
	kindText   = "text"
	kindBinary = "binary"
)

// rendered is a response body as the model reads it.
type rendered struct {
	kind      string
	mediaType string
	title     string
	text      string
}

// renderBody shows a body by its type: HTML as Markdown or text, JSON
// and other text as it is (in UTF-8), anything else described, never
// dumped. A type the server does not give is sniffed.
func renderBody(b body, contentType, format, baseURL string) (rendered, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		contentType = http.DetectContentType(b.data)
		mt, params, _ = mime.ParseMediaType(contentType)
	}
	r := rendered{mediaType: mt, kind: kindOf(mt)}
	if r.kind == kindBinary {
		return r, nil
	}
	data := b.data
	if r.kind == kindHTML {
		if enc, name, _ := charset.DetermineEncoding(data, contentType); name != "utf-8" {
			if d, err := enc.NewDecoder().Bytes(data); err == nil {
				data = d
			}
		}
	} else if cs := params["charset"]; cs != "" && !strings.EqualFold(cs, "utf-8") {
		if enc, _ := charset.Lookup(cs); enc != nil {
			if d, err := enc.NewDecoder().Bytes(data); err == nil {
				data = d
			}
		}
	}
	if textfile.IsBinary(data) {
		r.kind = kindBinary
		return r, nil
	}
	if b.truncated {
		data = trimPartialRune(data)
	}
	if r.kind == kindHTML && format != FormatHTML {
		p, err := renderHTML(data, format, baseURL)
		if err != nil {
			return r, err
		}
		r.title, r.text = p.title, p.text
		return r, nil
	}
	r.text = strings.ToValidUTF8(string(data), "\uFFFD")
	return r, nil
}

func kindOf(mt string) string {
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "application/x-ndjson":
		return kindJSON
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+xml"), textTypes[mt]:
		return kindText
	}
	return kindBinary
}

// textTypes are application/* types that are text.
var textTypes = map[string]bool{
	"application/xml": true, "application/javascript": true, "application/ecmascript": true,
	"application/x-javascript": true, "application/yaml": true, "application/x-yaml": true,
	"application/toml": true, "application/csv": true, "application/sql": true,
	"application/graphql": true, "application/x-sh": true, "application/x-www-form-urlencoded": true,
}

// trimPartialRune drops a rune cut in half by the body cap.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size != 1 {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}
