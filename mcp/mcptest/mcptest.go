// Package mcptest drives rung's MCP server from tests the way an agent's
// client does, with the official Go SDK's client: over Streamable HTTP
// (rung serve's /mcp) or over a subprocess's stdin and stdout (rung mcp).
// Tests outside package mcp use it, so that the SDK stays behind package
// mcp and its helpers.
package mcptest

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session is one MCP client session. Its methods fail the test on a
// protocol error (a tool's error is a result, see [Session.Fail]).
type Session struct {
	cs *sdk.ClientSession
}

func newClient() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "rung-test", Version: "1"}, nil)
}

// DialHTTP opens a session with the Streamable HTTP endpoint (such as
// http://127.0.0.1:7420/mcp), sending token as the bearer token ("" sends
// none). The session closes when the test ends.
func DialHTTP(t testing.TB, endpoint, token string) (*Session, error) {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
	cs, err := newClient().Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return &Session{cs: cs}, nil
}

// ConnectHTTP is DialHTTP that fails the test on an error.
func ConnectHTTP(t testing.TB, endpoint, token string) *Session {
	t.Helper()
	s, err := DialHTTP(t, endpoint, token)
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	return s
}

// ConnectCommand starts cmd and opens a session over its stdin and
// stdout. When the test ends the session closes its stdin and waits for
// it to exit.
func ConnectCommand(t testing.TB, cmd *exec.Cmd) *Session {
	t.Helper()
	cs, err := newClient().Connect(t.Context(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() { cs.Close() })
	return &Session{cs: cs}
}

// ID is the session's id ("" over stdio).
func (s *Session) ID() string { return s.cs.ID() }

// Close ends the session.
func (s *Session) Close() error { return s.cs.Close() }

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// Result is a tool call's answer.
type Result struct {
	IsError bool
	Text    string          // its text content, joined
	JSON    json.RawMessage // its structured content
}

// Call calls tool name with args (anything that marshals to a JSON
// object).
func (s *Session) Call(t testing.TB, name string, args any) Result {
	t.Helper()
	res, err := s.cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: protocol error %v", name, err)
	}
	var r Result
	r.IsError = res.IsError
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	r.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		r.JSON = b
	}
	return r
}

// Do calls tool name with args, fails the test if the tool fails, and
// decodes its structured result into out (unless out is nil).
func (s *Session) Do(t testing.TB, name string, args, out any) {
	t.Helper()
	r := s.Call(t, name, args)
	if r.IsError {
		t.Fatalf("%s(%v): tool error %s", name, args, r.Text)
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(r.JSON, out); err != nil {
		t.Fatalf("%s: decode %s: %v", name, r.JSON, err)
	}
}

// Fail calls tool name with args, which must fail, and returns the error
// text ("code: message").
func (s *Session) Fail(t testing.TB, name string, args any) string {
	t.Helper()
	r := s.Call(t, name, args)
	if !r.IsError {
		t.Fatalf("%s(%v) = %s; want a tool error", name, args, r.Text)
	}
	return r.Text
}

// Tool is a tool as tools/list describes it.
type Tool struct {
	Name, Description string
	InputSchema       map[string]any
	OutputSchema      map[string]any
}

// Tools lists the server's tools.
func (s *Session) Tools(t testing.TB) []Tool {
	t.Helper()
	var out []Tool
	for tool, err := range s.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		var in, outSchema map[string]any
		remarshal(t, tool.InputSchema, &in)
		if tool.OutputSchema != nil {
			remarshal(t, tool.OutputSchema, &outSchema)
		}
		out = append(out, Tool{Name: tool.Name, Description: tool.Description, InputSchema: in, OutputSchema: outSchema})
	}
	return out
}

// Templates lists the server's resource templates' URI templates.
func (s *Session) Templates(t testing.TB) []string {
	t.Helper()
	var out []string
	for rt, err := range s.cs.ResourceTemplates(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rt.URITemplate)
	}
	return out
}

// Resource is one resource's content.
type Resource struct {
	MIMEType string
	Text     string
	Blob     []byte
}

// Read reads the resource at uri; a JSON-RPC error is returned.
func (s *Session) Read(t testing.TB, uri string) (Resource, error) {
	t.Helper()
	res, err := s.cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return Resource{}, err
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	c := res.Contents[0]
	return Resource{MIMEType: c.MIMEType, Text: c.Text, Blob: c.Blob}, nil
}

func remarshal(t testing.TB, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatal(err)
	}
}
