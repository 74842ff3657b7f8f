package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// File tools: read, write, edit, list, search, move, delete.

const (
	// defaultLines is how many lines file_read returns unless asked.
	defaultLines = 2000
	// readMaxBytes bounds one file_read's content (about 64,000 tokens).
	readMaxBytes = 256 << 10
	// editMaxBytes bounds a file file_edit rewrites.
	editMaxBytes = 16 << 20
	// defaultEntries is how many entries file_list returns unless asked.
	defaultEntries = 1000
	// defaultMatches is how many matches file_search returns unless asked.
	defaultMatches = 200
)

type readIn struct {
	Sandbox    string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Path       string `json:"path" jsonschema:"the file: absolute path under /workspace or /tmp, or relative to /workspace"`
	StartLine  int    `json:"start_line,omitempty" jsonschema:"first line to return, counting from 1 (default 1)"`
	MaxLines   int    `json:"max_lines,omitempty" jsonschema:"how many lines to return (default 2000); at most 262144 bytes are returned either way"`
	ByteOffset int64  `json:"byte_offset,omitempty" jsonschema:"read bytes instead of lines, from this offset (for binary files or single huge lines)"`
	ByteCount  int    `json:"byte_count,omitempty" jsonschema:"with byte reads: how many bytes (default and at most 262144)"`
}

type readOut struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	Encoding   string `json:"encoding" jsonschema:"utf-8, or base64 when the part read is not valid UTF-8 text"`
	StartLine  int    `json:"start_line,omitempty"`
	EndLine    int    `json:"end_line,omitempty" jsonschema:"last line returned"`
	TotalLines int    `json:"total_lines,omitempty" jsonschema:"lines in the file, when the read reached its end"`
	ByteOffset int64  `json:"byte_offset,omitempty"`
	Bytes      int    `json:"bytes" jsonschema:"bytes of the file returned"`
	More       bool   `json:"more" jsonschema:"the file goes on: read on from end_line+1 (or byte_offset+bytes)"`
	Note       string `json:"note,omitempty"`
}

type writeIn struct {
	Sandbox  string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Path     string `json:"path" jsonschema:"the file: absolute path under /workspace or /tmp, or relative to /workspace; parent directories are created"`
	Content  string `json:"content" jsonschema:"the file's whole new content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"how content is encoded: utf-8 (the default) or base64 (for binary files)"`
	Mode     string `json:"mode,omitempty" jsonschema:"permission bits in octal, such as 0755 for a script (default: the file's current mode, or 0644 for a new file)"`
}

type editIn struct {
	Sandbox    string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Path       string `json:"path" jsonschema:"the file: absolute path under /workspace or /tmp, or relative to /workspace"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace, whitespace and indentation included; it must occur exactly once unless replace_all is set"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_string (default false)"`
}

type editOut struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Line         int    `json:"line" jsonschema:"the line where the first replacement starts"`
	Bytes        int64  `json:"bytes" jsonschema:"the file's size after the edit"`
}

type listFilesIn struct {
	Sandbox    string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Path       string `json:"path,omitempty" jsonschema:"the directory (default /workspace)"`
	Recursive  bool   `json:"recursive,omitempty" jsonschema:"list the whole tree below it, depth first (default: the directory alone)"`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"return at most this many entries (default 1000)"`
}

type listFilesOut struct {
	Files     []client.FileInfo `json:"files"`
	Truncated bool              `json:"truncated,omitempty"`
	Note      string            `json:"note,omitempty"`
}

type searchIn struct {
	Sandbox       string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Pattern       string `json:"pattern" jsonschema:"what to look for: an extended regular expression (grep -E: a|b, (x)+, [0-9]{3}), or a plain string with fixed_strings"`
	Path          string `json:"path,omitempty" jsonschema:"directory or file to search (default /workspace); .git directories are skipped"`
	Include       string `json:"include,omitempty" jsonschema:"only files whose name matches this glob, such as *.py"`
	IgnoreCase    bool   `json:"ignore_case,omitempty" jsonschema:"match case-insensitively"`
	FixedStrings  bool   `json:"fixed_strings,omitempty" jsonschema:"pattern is a plain string, not a regular expression"`
	MaxResults    int    `json:"max_results,omitempty" jsonschema:"return at most this many matching lines (default 200)"`
	IncludeHidden bool   `json:"include_hidden,omitempty" jsonschema:"also search .git directories"`
}

type searchOut struct {
	Matches   []match `json:"matches"`
	Count     int     `json:"count" jsonschema:"matching lines found, returned or not"`
	Truncated bool    `json:"truncated,omitempty"`
	Backend   string  `json:"backend" jsonschema:"where the search ran (isolate: in-process)"`
	Note      string  `json:"note,omitempty"`
}

type moveIn struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	From    string `json:"from" jsonschema:"file or directory to move: absolute path under /workspace or /tmp, or relative to /workspace"`
	To      string `json:"to" jsonschema:"its new path"`
}

type moved struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type deleteIn struct {
	Sandbox   string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Path      string `json:"path" jsonschema:"file or directory to delete: absolute path under /workspace or /tmp, or relative to /workspace"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"delete a directory with everything in it (without it, only an empty directory)"`
}

type deletedPath struct {
	Deleted string `json:"deleted"`
}

func (t *tools) addFileTools(s *sdk.Server) {
	add(t, s, spec{name: "file_read", title: "Read a file", readOnly: true,
		desc: "Read a text file in a sandbox, by lines (start_line, max_lines; up to 2000 lines by default) or by bytes " +
			"(byte_offset, byte_count). Says which lines came back, and whether the file goes on (more). Content that is not " +
			"UTF-8 comes back base64-encoded.",
		schema: []schemaRule{nonEmpty("path"), atLeast("start_line", 1), atLeast("max_lines", 1), atLeast("byte_offset", 0), between("byte_count", 1, readMaxBytes)}},
		t.readFile)
	add(t, s, spec{name: "file_write", title: "Write a file", destructive: true,
		desc: "Create or overwrite a file in a sandbox with the given content, creating parent directories. To change part " +
			"of an existing file, use file_edit.",
		schema: []schemaRule{nonEmpty("path"), oneOf("encoding", "utf-8", "base64"), matching("mode", `^0?[0-7]{3}$`)}},
		t.writeFile)
	add(t, s, spec{name: "file_edit", title: "Edit a file",
		desc: "Replace exact text in a file: old_string must occur in it exactly once (include enough surrounding lines to " +
			"make it unique), or set replace_all to replace every occurrence. Fails, changing nothing, when old_string is not " +
			"found or is not unique. The file keeps its mode.",
		schema: []schemaRule{nonEmpty("path"), nonEmpty("old_string")}},
		t.editFile)
	add(t, s, spec{name: "file_list", title: "List files", readOnly: true,
		desc:   "List a directory in a sandbox (its whole tree with recursive): path, type (file, dir, symlink), size, mode, modification time.",
		schema: []schemaRule{atLeast("max_entries", 1)}},
		func(ctx context.Context, c *client.Client, in listFilesIn) (listFilesOut, error) {
			files, err := c.ListFiles(ctx, in.Sandbox, in.Path, in.Recursive)
			if err != nil {
				return listFilesOut{}, err
			}
			max := in.MaxEntries
			if max <= 0 {
				max = defaultEntries
			}
			out := listFilesOut{Files: files}
			if len(files) > max {
				out.Files, out.Truncated = files[:max], true
				out.Note = fmt.Sprintf("%d of %d entries: list a subdirectory, or raise max_entries", max, len(files))
			}
			return out, nil
		})
	add(t, s, spec{name: "file_search", title: "Search files", readOnly: true,
		desc: "Search file contents in a sandbox (grep -rn): every line matching pattern under path, as {path, line, text}. " +
			"Binary files and .git directories are skipped.",
		schema: []schemaRule{nonEmpty("pattern"), atLeast("max_results", 1)}},
		t.searchFiles)
	add(t, s, spec{name: "file_move", title: "Move a file", destructive: true,
		desc: "Move or rename a file or directory in a sandbox.", schema: []schemaRule{nonEmpty("from"), nonEmpty("to")}},
		func(ctx context.Context, c *client.Client, in moveIn) (moved, error) {
			return moved{From: in.From, To: in.To}, c.Move(ctx, in.Sandbox, in.From, in.To)
		})
	add(t, s, spec{name: "file_delete", title: "Delete a file", destructive: true,
		desc: "Delete a file, or a directory (with recursive, everything in it).", schema: []schemaRule{nonEmpty("path")}},
		func(ctx context.Context, c *client.Client, in deleteIn) (deletedPath, error) {
			return deletedPath{Deleted: in.Path}, c.Remove(ctx, in.Sandbox, in.Path, in.Recursive)
		})
}

func (t *tools) readFile(ctx context.Context, c *client.Client, in readIn) (readOut, error) {
	bytesMode := in.ByteOffset > 0 || in.ByteCount > 0
	if bytesMode && (in.StartLine > 0 || in.MaxLines > 0) {
		return readOut{}, rung.Errorf(rung.ErrInvalid, "give lines (start_line, max_lines) or bytes (byte_offset, byte_count), not both")
	}
	r, err := c.ReadFile(ctx, in.Sandbox, in.Path)
	if err != nil {
		return readOut{}, err
	}
	defer r.Close()
	out := readOut{Path: in.Path}
	var content []byte
	if bytesMode {
		count := in.ByteCount
		if count <= 0 {
			count = readMaxBytes
		}
		if _, err := io.CopyN(io.Discard, r, in.ByteOffset); err != nil && err != io.EOF {
			return readOut{}, err
		}
		content = make([]byte, count+1)
		n, err := io.ReadFull(r, content)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return readOut{}, err
		}
		out.More = n > count
		content = content[:min(n, count)]
		out.ByteOffset = in.ByteOffset
	} else {
		start, count := max(in.StartLine, 1), in.MaxLines
		if count <= 0 {
			count = defaultLines
		}
		lr, err := readLines(r, start, count, readMaxBytes)
		if err != nil {
			return readOut{}, err
		}
		content = []byte(lr.content)
		out.StartLine, out.EndLine, out.TotalLines, out.More = lr.start, lr.end, lr.total, lr.more
		switch {
		case lr.end < lr.start && !lr.more && start > 1:
			out.Note = fmt.Sprintf("the file has %d lines: nothing from line %d", lr.total, start)
		case lr.longLines:
			out.Note = fmt.Sprintf("a line was cut at %d bytes: read it with byte_offset and byte_count", readMaxBytes)
		case lr.more && lr.end-lr.start+1 < count:
			out.Note = fmt.Sprintf("stopped at %d bytes: read on from start_line %d", readMaxBytes, lr.end+1)
		}
	}
	out.Bytes = len(content)
	out.Content, out.Encoding = string(content), "utf-8"
	if !utf8.Valid(content) {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(content), "base64"
	}
	return out, nil
}

func (t *tools) writeFile(ctx context.Context, c *client.Client, in writeIn) (client.FileInfo, error) {
	data := []byte(in.Content)
	if in.Encoding == "base64" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return client.FileInfo{}, rung.Errorf(rung.ErrInvalid, "content is not valid base64: %v", err)
		}
	}
	mode, err := t.modeFor(ctx, c, in.Sandbox, in.Path, in.Mode)
	if err != nil {
		return client.FileInfo{}, err
	}
	return c.WriteFile(ctx, in.Sandbox, in.Path, strings.NewReader(string(data)), mode)
}

// modeFor is the mode to write path with: given (octal), else its
// current one, else 0 (the API's default, 0644). The API sets the mode
// it is given on every write, so leaving it out would make a script lose
// its execute bits.
func (t *tools) modeFor(ctx context.Context, c *client.Client, sandbox, path, given string) (fs.FileMode, error) {
	if given != "" {
		m, err := strconv.ParseUint(given, 8, 32)
		if err != nil || m > 0o777 {
			return 0, rung.Errorf(rung.ErrInvalid, "mode %q: want octal permission bits such as 0644", given)
		}
		return fs.FileMode(m), nil
	}
	fi, err := c.Stat(ctx, sandbox, path)
	if errors.Is(err, rung.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if fi.Type != "file" {
		return 0, nil // the write reports what is wrong
	}
	m, err := strconv.ParseUint(fi.Mode, 8, 32)
	if err != nil {
		return 0, nil
	}
	return fs.FileMode(m), nil
}

func (t *tools) editFile(ctx context.Context, c *client.Client, in editIn) (editOut, error) {
	fi, err := c.Stat(ctx, in.Sandbox, in.Path)
	if err != nil {
		return editOut{}, err
	}
	if fi.Type != "file" {
		return editOut{}, rung.Errorf(rung.ErrInvalid, "%s is a %s, not a file", fi.Path, fi.Type)
	}
	if fi.Size > editMaxBytes {
		return editOut{}, &rung.LimitError{Limit: "edit_bytes", Max: editMaxBytes, TooLarge: true}
	}
	r, err := c.ReadFile(ctx, in.Sandbox, in.Path)
	if err != nil {
		return editOut{}, err
	}
	b, err := io.ReadAll(io.LimitReader(r, editMaxBytes+1))
	r.Close()
	if err != nil {
		return editOut{}, err
	}
	content := string(b)
	updated, n, err := replaceExact(content, in.OldString, in.NewString, in.ReplaceAll)
	if err != nil {
		return editOut{}, fmt.Errorf("edit %s: %w", fi.Path, err)
	}
	mode, _ := strconv.ParseUint(fi.Mode, 8, 32)
	// Between the read and this write the file may have changed (the API
	// has no compare-and-swap): the edit applies to what was read.
	info, err := c.WriteFile(ctx, in.Sandbox, fi.Path, strings.NewReader(updated), fs.FileMode(mode))
	if err != nil {
		return editOut{}, err
	}
	return editOut{Path: fi.Path, Replacements: n, Line: lineOf(content, strings.Index(content, in.OldString)), Bytes: info.Size}, nil
}

func (t *tools) searchFiles(ctx context.Context, c *client.Client, in searchIn) (searchOut, error) {
	max := in.MaxResults
	if max <= 0 {
		max = defaultMatches
	}
	// -Z ends each file name with a NUL, so names with colons parse; -I
	// skips binary files; -H names the file even when path is one.
	args := []string{"grep", "-rnHIZ"}
	if !in.IncludeHidden {
		args = append(args, "--exclude-dir=.git")
	}
	if in.IgnoreCase {
		args = append(args, "-i")
	}
	if in.FixedStrings {
		args = append(args, "-F")
	} else {
		args = append(args, "-E")
	}
	if in.Include != "" {
		args = append(args, "--include="+shellQuote(in.Include))
	}
	path := in.Path
	if path == "" {
		path = "/workspace"
	}
	args = append(args, "-e", shellQuote(in.Pattern), "--", shellQuote(path))
	res, err := c.Exec(ctx, in.Sandbox, client.ExecRequest{Command: strings.Join(args, " ")})
	if err != nil {
		return searchOut{}, err
	}
	ms, n := parseGrep(res.Stdout, max)
	out := searchOut{Matches: ms, Count: n, Backend: string(res.Backend)}
	if ms == nil {
		out.Matches = []match{}
	}
	if n > len(ms) {
		out.Truncated = true
		out.Note = fmt.Sprintf("%d of %d matching lines: narrow path or include, or raise max_results", len(ms), n)
	}
	if res.Truncated {
		out.Truncated = true
		out.Note = joinNote(out.Note, "grep's output passed the exec output limit: narrow the search")
	}
	// grep exits 1 when nothing matched, 2 on trouble (a bad pattern, a
	// missing path).
	if res.ExitCode > 1 {
		msg := strings.TrimSpace(res.Stderr)
		switch {
		case n == 0 && strings.Contains(msg, "No such file"):
			return searchOut{}, rung.Errorf(rung.ErrNotFound, "search: %s", firstLine(msg))
		case n == 0:
			return searchOut{}, rung.Errorf(rung.ErrInvalid, "search: %s", firstLine(msg))
		}
		out.Note = joinNote(out.Note, "grep: "+firstLine(msg))
	}
	return out, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
