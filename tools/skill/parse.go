package skill

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Limits on a skill file. A skill is read whole into the model's context,
// so a larger one would be a mistake, or an attack on the context window.
const (
	MaxFileSize        = 256 << 10
	maxFrontMatterSize = 64 << 10
	// maxDescription bounds what one skill adds to the system prompt.
	maxDescription = 1024
)

// NamePattern is what a skill name must match: lower-case letters, digits,
// '-' and '_', starting with a letter or digit, at most 64 characters. It
// is safe as a directory name and easy for a model to spell.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Skill is one parsed SKILL.md.
type Skill struct {
	Name          string
	Description   string
	DescriptionZh string
	// AllowedTools is what the skill says it needs (informational: it is
	// shown to the model with the skill, not enforced).
	AllowedTools []string
	// Body is the Markdown after the front matter.
	Body string
	// Dir is the skill's directory: absolute, for the model to read
	// companion files from.
	Dir string
	// InWorkspace is Dir relative to the workspace, when it lies there.
	InWorkspace string

	src     *source // where it was found
	dirName string  // its directory's name in src
}

// frontMatter is the YAML header. Fields other than these (license,
// metadata, version, ...) are allowed and ignored.
type frontMatter struct {
	Name           string    `yaml:"name"`
	Description    string    `yaml:"description"`
	DescriptionZh  string    `yaml:"description_zh"`
	DescriptionZh2 string    `yaml:"description-zh"`
	DescriptionZh3 string    `yaml:"descriptionZh"`
	AllowedTools   yaml.Node `yaml:"allowed-tools"`
	AllowedTools2  yaml.Node `yaml:"allowedTools"`
}

// parse reads a SKILL.md found in directory dirName. The name comes from
// the front matter, or from the directory when the front matter has none.
func parse(dirName string, data []byte) (*Skill, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is over the %d KiB limit", FileName, MaxFileSize>>10)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("not UTF-8 text")
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	head, body, err := splitFrontMatter(data)
	if err != nil {
		return nil, err
	}
	var fm frontMatter
	if err := yaml.Unmarshal(head, &fm); err != nil {
		return nil, fmt.Errorf("front matter: %s", oneLine(err.Error()))
	}
	s := &Skill{Name: strings.TrimSpace(fm.Name), Body: string(body)}
	if s.Name == "" {
		s.Name = dirName
	}
	if !NamePattern.MatchString(s.Name) {
		return nil, fmt.Errorf("name %q must match %s", s.Name, NamePattern)
	}
	s.Description = clip(oneLine(fm.Description))
	if s.Description == "" {
		return nil, errors.New("front matter has no description")
	}
	s.DescriptionZh = clip(oneLine(firstNonEmpty(fm.DescriptionZh, fm.DescriptionZh2, fm.DescriptionZh3)))
	tools := fm.AllowedTools
	if tools.Kind == 0 {
		tools = fm.AllowedTools2
	}
	if s.AllowedTools, err = toolList(&tools); err != nil {
		return nil, err
	}
	return s, nil
}

// splitFrontMatter separates the YAML between the opening "---" line and
// the closing "---" (or "...") line from the Markdown after it.
func splitFrontMatter(data []byte) (head, body []byte, err error) {
	first, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, nil, errors.New("no YAML front matter: the file must start with a --- line")
	}
	for off := 0; off < len(rest); {
		if off > maxFrontMatterSize {
			return nil, nil, fmt.Errorf("front matter is over the %d KiB limit", maxFrontMatterSize>>10)
		}
		line, _, _ := bytes.Cut(rest[off:], []byte("\n"))
		end := off + len(line) + 1
		if t := string(bytes.TrimRight(line, " \t\r")); t == "---" || t == "..." {
			return rest[:off], bytes.TrimLeft(rest[min(end, len(rest)):], "\r\n"), nil
		}
		off = end
	}
	return nil, nil, errors.New("front matter is not closed by a --- line")
}

// toolList accepts a YAML list of names or one comma-separated string.
func toolList(n *yaml.Node) ([]string, error) {
	var raw []string
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		raw = strings.Split(n.Value, ",")
	case yaml.SequenceNode:
		if err := n.Decode(&raw); err != nil {
			return nil, fmt.Errorf("allowed-tools: %s", oneLine(err.Error()))
		}
	default:
		return nil, errors.New("allowed-tools must be a list or a comma-separated string")
	}
	var out []string
	for _, t := range raw {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out, nil
}

// oneLine collapses whitespace, so that a description cannot add lines
// (or fake structure) to the system prompt.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxDescription {
		return s
	}
	r := []rune(s)
	return string(r[:maxDescription-1]) + "…"
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
