package client

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strconv"
)

// WriteFile writes r to path in the sandbox (parents are created),
// streaming it. mode 0 means 0644.
func (c *Client) WriteFile(ctx context.Context, id, path string, r io.Reader, mode fs.FileMode) (FileInfo, error) {
	q := url.Values{"path": {path}}
	if mode != 0 {
		q.Set("mode", fmt.Sprintf("%o", mode.Perm()))
	}
	return c.upload(ctx, sbPath(id, "/files"), q, r, "application/octet-stream")
}

func (c *Client) upload(ctx context.Context, p string, q url.Values, r io.Reader, ctype string) (FileInfo, error) {
	req, err := c.newRequest(ctx, "PUT", p, q, r, ctype)
	if err != nil {
		return FileInfo{}, err
	}
	resp, err := c.send(req)
	if err != nil {
		return FileInfo{}, err
	}
	defer resp.Body.Close()
	var fi FileInfo
	decodeJSON(resp.Body, &fi)
	return fi, nil
}

// ReadFile opens path in the sandbox. The caller closes the reader.
func (c *Client) ReadFile(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return c.download(ctx, sbPath(id, "/files"), url.Values{"path": {path}})
}

func (c *Client) download(ctx context.Context, p string, q url.Values) (io.ReadCloser, error) {
	req, err := c.newRequest(ctx, "GET", p, q, nil, "")
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Stat describes path without following a final symlink.
func (c *Client) Stat(ctx context.Context, id, path string) (FileInfo, error) {
	var fi FileInfo
	return fi, c.do(ctx, "GET", sbPath(id, "/files/stat"), url.Values{"path": {path}}, nil, &fi)
}

// ListFiles lists directory path ("" is /workspace), its whole tree when
// recursive.
func (c *Client) ListFiles(ctx context.Context, id, path string, recursive bool) ([]FileInfo, error) {
	q := url.Values{"recursive": {strconv.FormatBool(recursive)}}
	if path != "" {
		q.Set("path", path)
	}
	var out struct {
		Files []FileInfo `json:"files"`
	}
	return out.Files, c.do(ctx, "GET", sbPath(id, "/files/list"), q, nil, &out)
}

// Mkdir makes directory path (with its parents when parents is set).
func (c *Client) Mkdir(ctx context.Context, id, path string, parents bool) error {
	return c.do(ctx, "POST", sbPath(id, "/files/mkdir"), nil, map[string]any{"path": path, "parents": parents}, nil)
}

// Move renames from to to.
func (c *Client) Move(ctx context.Context, id, from, to string) error {
	return c.do(ctx, "POST", sbPath(id, "/files/move"), nil, map[string]string{"from": from, "to": to}, nil)
}

// Remove deletes path (a directory tree when recursive).
func (c *Client) Remove(ctx context.Context, id, path string, recursive bool) error {
	return c.do(ctx, "DELETE", sbPath(id, "/files"), url.Values{"path": {path}, "recursive": {strconv.FormatBool(recursive)}}, nil, nil)
}

// DownloadTar returns directory path as a tar stream. The caller closes it.
func (c *Client) DownloadTar(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return c.download(ctx, sbPath(id, "/files/tar"), url.Values{"path": {path}})
}

// UploadTar extracts the tar stream r into directory path.
func (c *Client) UploadTar(ctx context.Context, id, path string, r io.Reader) error {
	_, err := c.upload(ctx, sbPath(id, "/files/tar"), url.Values{"path": {path}}, r, "application/x-tar")
	return err
}
