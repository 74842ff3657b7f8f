package router_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/router"
)

// checker accepts scripts made only of the commands it knows, like the
// shell's Check does for its tool set.
type checker map[string]bool

func (c checker) Check(script string) error {
	cmd, _, _ := strings.Cut(script, " ")
	if !c[cmd] {
		return fmt.Errorf("%s: command not found in the isolate tier", cmd)
	}
	return nil
}

func TestRoute(t *testing.T) {
	t.Parallel()
	isolate := checker{"echo": true, "cat": true}
	tests := []struct {
		name      string
		req       router.Request
		want      rung.Backend
		wantErr   error
		reasonHas string
	}{
		{"auto isolate", router.Request{Script: "echo hi"}, rung.BackendIsolate, nil, "isolate"},
		{"auto explicit", router.Request{Script: "cat f", Backend: rung.BackendAuto}, rung.BackendIsolate, nil, "isolate"},
		{"auto container", router.Request{Script: "python3 x.py", ContainerAvailable: true}, rung.BackendContainer, nil, "python3"},
		{"auto no container", router.Request{Script: "python3 x.py"}, rung.BackendContainer, rung.ErrUnavailable, "python3"},
		{"isolate requested", router.Request{Script: "python3 x.py", Backend: rung.BackendIsolate}, rung.BackendIsolate, nil, "requested"},
		{"container requested", router.Request{Script: "echo hi", Backend: rung.BackendContainer, ContainerAvailable: true}, rung.BackendContainer, nil, "requested"},
		{"container unavailable", router.Request{Script: "echo hi", Backend: rung.BackendContainer}, rung.BackendContainer, rung.ErrUnavailable, "requested"},
		{"bad backend", router.Request{Script: "echo hi", Backend: "gpu"}, "", rung.ErrInvalid, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := router.Route(tc.req, isolate)
			if d.Backend != tc.want || !errors.Is(d.Err, tc.wantErr) || (tc.wantErr == nil) != (d.Err == nil) {
				t.Errorf("Route(%+v) = %v, err %v; want %s, %v", tc.req, d, d.Err, tc.want, tc.wantErr)
			}
			if !strings.Contains(d.Reason, tc.reasonHas) {
				t.Errorf("Route(%+v).Reason = %q, want it to mention %q", tc.req, d.Reason, tc.reasonHas)
			}
		})
	}
	d := router.Route(router.Request{Script: "python3 x.py"}, isolate)
	if !strings.Contains(d.Err.Error(), "python3") {
		t.Errorf("unavailable error %q does not name the unsupported command", d.Err)
	}
}
