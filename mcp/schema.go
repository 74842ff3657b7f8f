package mcp

import (
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// A schemaRule adjusts one property of an inferred input schema: what
// struct tags cannot say (enums, bounds, non-empty strings).
type schemaRule struct {
	path string // property names joined by "."; "name[]" is an array's items
	set  func(*jsonschema.Schema)
}

// oneOf limits a string property to vals.
func oneOf(path string, vals ...string) schemaRule {
	return schemaRule{path, func(s *jsonschema.Schema) {
		s.Enum = make([]any, len(vals))
		for i, v := range vals {
			s.Enum[i] = v
		}
	}}
}

// atLeast sets a number's minimum.
func atLeast(path string, min float64) schemaRule {
	return schemaRule{path, func(s *jsonschema.Schema) { s.Minimum = &min }}
}

// between sets a number's minimum and maximum.
func between(path string, min, max float64) schemaRule {
	return schemaRule{path, func(s *jsonschema.Schema) { s.Minimum, s.Maximum = &min, &max }}
}

// nonEmpty requires a string of at least one character.
func nonEmpty(path string) schemaRule {
	return schemaRule{path, func(s *jsonschema.Schema) { one := 1; s.MinLength = &one }}
}

// matching requires a string to match the regular expression re.
func matching(path, re string) schemaRule {
	return schemaRule{path, func(s *jsonschema.Schema) { s.Pattern = re }}
}

// inputSchema infers In's schema (properties from json tags, descriptions
// from jsonschema tags, required unless omitempty, no other properties)
// and applies rules. A rule naming no property is a bug in this package:
// it panics when the tool is registered.
func inputSchema[In any](rules []schemaRule) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema: %v", err))
	}
	for _, r := range rules {
		p := s
		for part := range strings.SplitSeq(r.path, ".") {
			name, items := strings.CutSuffix(part, "[]")
			p = p.Properties[name]
			if p != nil && items {
				p = p.Items
			}
			if p == nil {
				panic(fmt.Sprintf("mcp: schema rule for %s: no such property", r.path))
			}
		}
		r.set(p)
	}
	return s
}
