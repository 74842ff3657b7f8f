package agent

// The table bounds of process.go, for the tests of package agent_test.
const (
	MaxProcesses    = maxProcesses
	MaxExited       = maxExited
	MaxExitedOutput = maxExitedOutput
)

// DropIdle closes c's kept-alive connections, so that its next request
// dials anew.
func (c *Client) DropIdle() { c.http.CloseIdleConnections() }

// UTF8Tail is utf8Tail, for the tests of package agent_test.
var UTF8Tail = utf8Tail
