package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// parityCase is one script of the parity suite (TestParity): run through
// backend auto and through real bash in the same sandbox's container, each
// from the same starting files.
type parityCase struct {
	Name   string // file:line
	Script string
	// Files, when not nil, are the case's own starting files (path
	// relative to /workspace -> content) instead of the suite's fixture.
	Files map[string]string
	// StderrAny: stderr is not compared (its wording or order is not
	// stable between two runs of the same bash; the case file says why).
	StderrAny bool
	// StdoutAny: stdout is not compared (it holds something that changes
	// from one run to the next: a time, a random name); the exit status
	// and the files still are.
	StdoutAny bool
	// Stdin is the exec's standard input.
	Stdin string
}

// loadParityCases reads every testdata/parity/*.txt file.
//
// The format is one case per line: the line is the script, as `bash -c`
// runs it. Blank lines and lines starting with '#' are skipped. A line
// "<<<" starts a multi-line script that a line ">>>" ends. Flags go
// before the script (or after "<<<"), each a word starting with '@':
// @stderr (stderr not compared), @stdout (stdout not compared),
// @stdin=TEXT (TEXT, with \n for newlines, is the exec's stdin; no
// spaces). A file's cases share the suite's starting files.
func loadParityCases(dir string) ([]parityCase, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []parityCase
	seen := map[string]string{}
	for _, p := range paths {
		cs, err := parseParityFile(p)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if prev, ok := seen[c.Script+"\x00"+c.Stdin]; ok {
				return nil, fmt.Errorf("%s: same script as %s", c.Name, prev)
			}
			seen[c.Script+"\x00"+c.Stdin] = c.Name
			out = append(out, c)
		}
	}
	return out, nil
}

func parseParityFile(path string) ([]parityCase, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	base := strings.TrimSuffix(filepath.Base(path), ".txt")
	var out []parityCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	var block *parityCase
	var body []string
	for sc.Scan() {
		line++
		text := sc.Text()
		if block != nil {
			if text == ">>>" {
				block.Script = strings.Join(body, "\n")
				out = append(out, *block)
				block, body = nil, nil
				continue
			}
			body = append(body, text)
			continue
		}
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		c := parityCase{Name: fmt.Sprintf("%s:%d", base, line)}
		rest, err := c.flags(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if rest == "<<<" {
			block = &c
			continue
		}
		c.Script = rest
		out = append(out, c)
	}
	if block != nil {
		return nil, fmt.Errorf("%s: %s: <<< without >>>", path, block.Name)
	}
	return out, sc.Err()
}

// flags takes the leading @flags off text into c and returns the rest.
func (c *parityCase) flags(text string) (string, error) {
	for strings.HasPrefix(text, "@") {
		word, rest, _ := strings.Cut(text, " ")
		switch {
		case word == "@stderr":
			c.StderrAny = true
		case word == "@stdout":
			c.StdoutAny = true
		case strings.HasPrefix(word, "@stdin="):
			c.Stdin = strings.ReplaceAll(strings.TrimPrefix(word, "@stdin="), `\n`, "\n")
		default:
			return "", fmt.Errorf("unknown flag %s", word)
		}
		text = strings.TrimLeft(rest, " ")
	}
	return text, nil
}
