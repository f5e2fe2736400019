package web

import (
	"bytes"
	"regexp"
	"strings"
	"sync"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Output formats of an HTML page.
const (
	FormatMarkdown = "markdown"
	FormatText     = "text"
	FormatHTML     = "html"
)

// markdown is built once: a converter holds only its registrations, and
// ConvertNode keeps each conversion's state apart (it is documented safe
// for concurrent use).
var markdown = sync.OnceValue(func() *converter.Converter {
	c := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
		strikethrough.NewStrikethroughPlugin(),
	))
	// Elements that carry no readable text for a model.
	for _, tag := range []string{"svg", "iframe", "template", "object", "embed", "canvas", "select", "button"} {
		c.Register.TagType(tag, converter.TagTypeRemove, converter.PriorityStandard)
	}
	return c
})

// page is an HTML document rendered for the model.
type page struct {
	title string
	text  string
}

// renderHTML parses an HTML document (already UTF-8) and renders it as
// Markdown with absolute links, or as plain text.
func renderHTML(src []byte, format, baseURL string) (page, error) {
	doc, err := html.Parse(bytes.NewReader(src))
	if err != nil {
		return page{}, err
	}
	p := page{title: collapseSpace(title(doc))}
	switch format {
	case FormatText:
		p.text = plainText(doc)
	default:
		md, err := markdown().ConvertNode(doc, converter.WithDomain(baseURL))
		if err != nil {
			return page{}, err
		}
		p.text = strings.TrimSpace(string(md))
	}
	return p, nil
}

func title(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		return textOf(n)
	}
	if n.Type == html.ElementNode && n.DataAtom == atom.Body {
		return ""
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := title(c); t != "" {
			return t
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// skipped elements hold no text a reader sees.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Canvas: true,
	atom.Select: true, atom.Button: true,
}

// blocks start on a new line.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true, atom.Header: true,
	atom.Footer: true, atom.Nav: true, atom.Aside: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Ul: true, atom.Ol: true,
	atom.Table: true, atom.Pre: true, atom.Blockquote: true, atom.Dl: true, atom.Dt: true,
	atom.Dd: true, atom.Figure: true, atom.Figcaption: true, atom.Hr: true, atom.Form: true,
}

// plainText extracts the visible text of a document: blocks on their own
// lines, list items marked, table cells separated by tabs, whitespace
// collapsed as a browser would, except inside <pre>.
func plainText(doc *html.Node) string {
	var b strings.Builder
	atLineStart := func() bool {
		s := b.String()
		return s == "" || s[len(s)-1] == '\n' || s[len(s)-1] == '\t' || strings.HasSuffix(s, "- ")
	}
	var walk func(n *html.Node, pre bool)
	walk = func(n *html.Node, pre bool) {
		switch n.Type {
		case html.TextNode:
			switch t := spaceRun.ReplaceAllString(n.Data, " "); {
			case pre:
				b.WriteString(n.Data)
			case atLineStart():
				b.WriteString(strings.TrimLeft(t, " "))
			default:
				b.WriteString(t)
			}
			return
		case html.ElementNode:
			if skipped[n.DataAtom] {
				return
			}
			switch {
			case n.DataAtom == atom.Br:
				b.WriteString("\n")
			case n.DataAtom == atom.Li:
				b.WriteString("\n- ")
			case n.DataAtom == atom.Tr:
				b.WriteString("\n")
			case n.DataAtom == atom.Td || n.DataAtom == atom.Th:
				if !atLineStart() {
					b.WriteString("\t")
				}
			case blocks[n.DataAtom]:
				b.WriteString("\n\n")
			}
			pre = pre || n.DataAtom == atom.Pre
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, pre)
		}
		if n.Type == html.ElementNode && blocks[n.DataAtom] {
			b.WriteString("\n\n")
		}
	}
	walk(doc, false)
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(blankRun.ReplaceAllString(strings.Join(lines, "\n"), "\n\n"))
}

var (
	spaceRun = regexp.MustCompile(`[ \t\r\n\f]+`)
	blankRun = regexp.MustCompile(`\n{3,}`)
)

func collapseSpace(s string) string { return strings.TrimSpace(spaceRun.ReplaceAllString(s, " ")) }
