package agent

// The table bounds of process.go, for the tests of package agent_test.
const (
	MaxProcesses    = maxProcesses
	MaxExited       = maxExited
	MaxExitedOutput = maxExitedOutput
)
