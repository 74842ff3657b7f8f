package router_test

import (
	"errors"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/router"
	"rung.dev/rung/shell"
	"rung.dev/rung/shell/tools"
)

// basePath answers as the container's PATH in the base image would for
// the commands these cases use: tools and the programs agents run.
func basePath(name string) string {
	switch name {
	case "python3", "node", "pip", "cat", "ls", "echo", "grep", "timeout", "env", "xargs", "find":
		return "/usr/bin/" + name
	}
	return ""
}

func TestRoute(t *testing.T) {
	t.Parallel()
	isolate := shell.New(shell.Config{Tools: tools.All()})
	tests := []struct {
		name      string
		req       router.Request
		want      rung.Backend
		wantErr   error
		reasonHas string
		class     string
	}{
		{"auto isolate", router.Request{Script: "echo hi", LookPath: basePath}, rung.BackendIsolate, nil, "isolate", router.ClassChecked},
		{"auto explicit", router.Request{Script: "cat f", Backend: rung.BackendAuto, LookPath: basePath}, rung.BackendIsolate, nil, "isolate", router.ClassChecked},
		{"auto container", router.Request{Script: "python3 x.py", ContainerAvailable: true, LookPath: basePath}, rung.BackendContainer, nil, "python3", router.ClassUnsupported},
		{"auto wrapped", router.Request{Script: "timeout 60 python3 x.py || echo failed", ContainerAvailable: true, LookPath: basePath}, rung.BackendContainer, nil, "python3", router.ClassUnsupported},
		{"auto tool not in image", router.Request{Script: "column -t f", ContainerAvailable: true, LookPath: basePath}, rung.BackendContainer, nil, "column", router.ClassUnsupported},
		{"auto env", router.Request{Script: "ls", Env: map[string]string{"PATH": "/opt/bin"}, ContainerAvailable: true, LookPath: basePath}, rung.BackendContainer, nil, "PATH", router.ClassUnsupported},
		{"auto no container", router.Request{Script: "python3 x.py", LookPath: basePath}, rung.BackendContainer, rung.ErrUnavailable, "python3", router.ClassUnsupported},
		{"isolate requested", router.Request{Script: "python3 x.py", Backend: rung.BackendIsolate}, rung.BackendIsolate, nil, "requested", router.ClassRequested},
		{"container requested", router.Request{Script: "echo hi", Backend: rung.BackendContainer, ContainerAvailable: true}, rung.BackendContainer, nil, "requested", router.ClassRequested},
		{"container unavailable", router.Request{Script: "echo hi", Backend: rung.BackendContainer}, rung.BackendContainer, rung.ErrUnavailable, "requested", router.ClassRequested},
		{"bad backend", router.Request{Script: "echo hi", Backend: "gpu"}, "", rung.ErrInvalid, "invalid", router.ClassInvalid},
		{"pty auto", router.Request{Script: "echo hi", PTY: true, ContainerAvailable: true, LookPath: basePath}, rung.BackendContainer, nil, "no terminal", router.ClassPTY},
		{"pty container", router.Request{Script: "bash -l", PTY: true, Backend: rung.BackendContainer, ContainerAvailable: true}, rung.BackendContainer, nil, "requested", router.ClassRequested},
		{"pty no container", router.Request{Script: "echo hi", PTY: true, LookPath: basePath}, rung.BackendContainer, rung.ErrUnavailable, "no terminal", router.ClassPTY},
		{"pty isolate", router.Request{Script: "echo hi", PTY: true, Backend: rung.BackendIsolate, ContainerAvailable: true}, rung.BackendIsolate, rung.ErrInvalid, "requested", router.ClassRequested},
		{"pty bad backend", router.Request{Script: "echo hi", PTY: true, Backend: "gpu"}, "", rung.ErrInvalid, "invalid", router.ClassInvalid},
		{"live stdin auto", router.Request{Script: "cat", LiveStdin: true, ContainerAvailable: true, LookPath: basePath}, rung.BackendContainer, nil, "live stdin", router.ClassLiveStdin},
		{"live stdin no container", router.Request{Script: "cat", LiveStdin: true, LookPath: basePath}, rung.BackendIsolate, nil, "every command", router.ClassChecked},
		{"live stdin isolate", router.Request{Script: "cat", LiveStdin: true, Backend: rung.BackendIsolate, ContainerAvailable: true}, rung.BackendIsolate, nil, "requested", router.ClassRequested},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := router.Route(tc.req, isolate)
			if d.Backend != tc.want || !errors.Is(d.Err, tc.wantErr) || (tc.wantErr == nil) != (d.Err == nil) {
				t.Errorf("Route(%q) = %v, err %v; want %s, %v", tc.req.Script, d, d.Err, tc.want, tc.wantErr)
			}
			if d.Class != tc.class {
				t.Errorf("Route(%q).Class = %q, want %q", tc.req.Script, d.Class, tc.class)
			}
			if !strings.Contains(d.Reason, tc.reasonHas) {
				t.Errorf("Route(%q).Reason = %q, want it to mention %q", tc.req.Script, d.Reason, tc.reasonHas)
			}
			// Only auto's choice of the isolate tier hands the parsed
			// script on.
			if (d.Program != nil) != (d.Backend == rung.BackendIsolate && tc.req.Backend != rung.BackendIsolate && d.Err == nil) {
				t.Errorf("Route(%q).Program = %v with backend %s", tc.req.Script, d.Program, d.Backend)
			}
			if d.Program != nil && d.Program.Script() != tc.req.Script {
				t.Errorf("Route(%q).Program.Script() = %q", tc.req.Script, d.Program.Script())
			}
		})
	}
	d := router.Route(router.Request{Script: "python3 x.py", LookPath: basePath}, isolate)
	if !strings.Contains(d.Err.Error(), "python3") {
		t.Errorf("unavailable error %q does not name the unsupported command", d.Err)
	}
}
