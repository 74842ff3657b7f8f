package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// Resources: a sandbox's journal and its files, by URI template.

const (
	uriPrefix       = "rung://sandboxes/"
	journalTemplate = uriPrefix + "{sandbox}/journal"
	filesTemplate   = uriPrefix + "{sandbox}/files/{+path}"
	// resourceJournalMax bounds the entries of a journal resource (the
	// journal tool pages through more).
	resourceJournalMax = 10_000
	// resourceFileMax bounds a file resource (file_read reads parts of
	// bigger ones).
	resourceFileMax = 4 << 20
)

func (t *tools) addResources(s *sdk.Server) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "journal", Title: "Sandbox journal", URITemplate: journalTemplate,
		MIMEType:    "application/json",
		Description: "Everything that happened in a sandbox, in order (the journal tool's entries, up to 10,000): rung://sandboxes/ID/journal"},
		t.readResource)
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "file", Title: "Sandbox file", URITemplate: filesTemplate,
		Description: "A file in a sandbox (up to 4 MiB; text, or a blob when not UTF-8), or a directory's listing as JSON: " +
			"rung://sandboxes/ID/files/workspace/src/main.py is /workspace/src/main.py"},
		t.readResource)
}

func (t *tools) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (_ *sdk.ReadResourceResult, err error) {
	uri := req.Params.URI
	c, err := t.clientFor(req.Extra)
	if err != nil {
		return nil, asToolError(err)
	}
	sandbox, what, p, err := parseURI(uri)
	if err != nil {
		return nil, asToolError(err)
	}
	var rc *sdk.ResourceContents
	if what == "journal" {
		rc, err = journalResource(ctx, c, sandbox)
	} else {
		rc, err = fileResource(ctx, c, sandbox, p)
	}
	if errors.Is(err, rung.ErrNotFound) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, asToolError(err)
	}
	rc.URI = uri
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{rc}}, nil
}

// parseURI splits rung://sandboxes/ID/journal and
// rung://sandboxes/ID/files/PATH; p is PATH made absolute.
func parseURI(uri string) (sandbox, what, p string, err error) {
	rest, ok := strings.CutPrefix(uri, uriPrefix)
	if !ok {
		return "", "", "", rung.Errorf(rung.ErrInvalid, "resource %q: not a rung sandbox URI", uri)
	}
	sandbox, rest, _ = strings.Cut(rest, "/")
	if sandbox, err = url.PathUnescape(sandbox); err != nil || sandbox == "" {
		return "", "", "", rung.Errorf(rung.ErrInvalid, "resource %q: bad sandbox", uri)
	}
	if rest == "journal" {
		return sandbox, "journal", "", nil
	}
	fp, ok := strings.CutPrefix(rest, "files/")
	if !ok {
		return "", "", "", rung.Errorf(rung.ErrInvalid, "resource %q: want .../journal or .../files/PATH", uri)
	}
	if fp, err = url.PathUnescape(fp); err != nil {
		return "", "", "", rung.Errorf(rung.ErrInvalid, "resource %q: bad path", uri)
	}
	return sandbox, "files", "/" + fp, nil
}

func journalResource(ctx context.Context, c *client.Client, sandbox string) (*sdk.ResourceContents, error) {
	j, err := readJournal(ctx, c, sandbox, 0, resourceJournalMax, "")
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	return &sdk.ResourceContents{MIMEType: "application/json", Text: string(b)}, nil
}

func fileResource(ctx context.Context, c *client.Client, sandbox, p string) (*sdk.ResourceContents, error) {
	fi, err := c.Stat(ctx, sandbox, p)
	if err != nil {
		return nil, err
	}
	if fi.Type == "dir" {
		files, err := c.ListFiles(ctx, sandbox, p, false)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(listFilesOut{Files: files})
		if err != nil {
			return nil, err
		}
		return &sdk.ResourceContents{MIMEType: "application/json", Text: string(b)}, nil
	}
	if fi.Size > resourceFileMax {
		return nil, rung.Errorf(rung.ErrTooLarge, "%s is %d bytes, more than a resource holds (%d): read parts of it with file_read", fi.Path, fi.Size, resourceFileMax)
	}
	r, err := c.ReadFile(ctx, sandbox, p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, resourceFileMax))
	if err != nil {
		return nil, err
	}
	typ := mime.TypeByExtension(path.Ext(p))
	if utf8.Valid(b) {
		if typ == "" {
			typ = "text/plain; charset=utf-8"
		}
		return &sdk.ResourceContents{MIMEType: typ, Text: string(b)}, nil
	}
	if typ == "" {
		typ = "application/octet-stream"
	}
	return &sdk.ResourceContents{MIMEType: typ, Blob: b}, nil
}
