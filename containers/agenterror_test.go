package containers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/agent"
)

// TestAgentError pins how the agent's answers and silences reach the
// API: a refusal by its status code, no answer at all as unavailable
// (503; it was an internal 500 when the agent's socket was gone), and a
// caller's own cancellation untouched.
func TestAgentError(t *testing.T) {
	dialErr := fmt.Errorf("agent exec: %w", &net.OpError{Op: "dial", Net: "unix", Err: errors.New("connection refused")})
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"no answer", dialErr, rung.ErrUnavailable},
		{"no socket", fmt.Errorf("agent exec: %w", agent.ErrNoAgent), rung.ErrUnavailable},
		{"stopping", &agent.StatusError{Code: 503, Msg: "stopping"}, rung.ErrUnavailable},
		{"unknown process", &agent.StatusError{Code: 404}, rung.ErrNotFound},
		{"too many processes", &agent.StatusError{Code: 429}, rung.ErrLimit},
		{"bad request", &agent.StatusError{Code: 400}, rung.ErrInvalid},
		{"canceled", fmt.Errorf("agent exec: %w", context.Canceled), context.Canceled},
		{"deadline", fmt.Errorf("agent exec: %w", context.DeadlineExceeded), context.DeadlineExceeded},
	}
	for _, tc := range tests {
		if got := agentError(tc.err); !errors.Is(got, tc.want) {
			t.Errorf("%s: agentError(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if agentError(nil) != nil {
		t.Error("agentError(nil) is not nil")
	}
	if msg := agentError(dialErr).Error(); msg != "the sandbox's container does not answer" {
		t.Errorf("message %q carries transport detail", msg)
	}
}
