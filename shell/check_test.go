package shell_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/shell"
)

// upperTool is a small real tool for these tests: it upper-cases its
// standard input and refuses any flag but -n.
var upperTool = shell.Tool{
	Run: func(ctx context.Context, c *shell.Call) int {
		for _, a := range c.Args[1:] {
			if a != "-n" {
				return c.Fail("flag " + a)
			}
		}
		b, err := io.ReadAll(c.Stdin)
		if err != nil {
			return 1
		}
		fmt.Fprint(c.Stdout, strings.ToUpper(string(b)))
		return 0
	},
	Check: func(args []string) error {
		for _, a := range args {
			if a != "-n" && a != shell.Unknown {
				return fmt.Errorf("flag %s: %w", a, shell.ErrUnsupported)
			}
		}
		return nil
	},
}

func TestCheck(t *testing.T) {
	sh := shell.New(shell.Config{Tools: map[string]shell.Tool{"upper": upperTool}})
	tests := []struct {
		name   string
		script string
		want   error // nil, shell.ErrUnsupported or rung.ErrInvalid
	}{
		{"builtins", "echo hi; printf '%s\\n' x; read a <<< b", nil},
		{"tool", "echo hi | upper", nil},
		{"tool flag ok", "upper -n < /workspace/f", nil},
		{"tool flag refused", "upper -z", shell.ErrUnsupported},
		{"tool dynamic flag", "upper $flag", nil},
		{"tool by path", "/usr/bin/upper -n", nil},
		{"unknown command", "python3 x.py", shell.ErrUnsupported},
		{"unknown in pipeline", "echo x | node", shell.ErrUnsupported},
		{"unknown in subst", "x=$(gcc --version)", shell.ErrUnsupported},
		{"unknown in function", "f() { cargo build; }", shell.ErrUnsupported},
		{"function defined later", "f; f() { echo; }", nil},
		{"dynamic command", "$cmd arg", shell.ErrUnsupported},
		{"command -v unknown", "command -v python3", shell.ErrUnsupported},
		{"command wrapper", "command upper -z", shell.ErrUnsupported},
		{"exec wrapper", "exec nosuch", shell.ErrUnsupported},
		{"redirect workspace", "echo > /workspace/a.txt", nil},
		{"redirect tmp", "echo >> /tmp/x 2>/dev/null", nil},
		{"redirect relative", "echo > out.txt", nil},
		{"redirect dev fd", "echo 2>/dev/fd/2", nil},
		{"redirect dev fd 3", "echo 2>/dev/fd/3", shell.ErrUnsupported},
		{"redirect etc", "echo > /etc/passwd", shell.ErrUnsupported},
		{"redirect escape", "cat_() { :; }; cat_ < /workspace/../etc/shadow", shell.ErrUnsupported},
		{"read root", "read x < /root/.ssh/id", shell.ErrUnsupported},
		{"coproc", "coproc cat_ { :; }", shell.ErrUnsupported},
		{"history", "history", shell.ErrUnsupported},
		{"syntax error", "if then fi", rung.ErrInvalid},
		{"unclosed quote", "echo 'abc", rung.ErrInvalid},
		{"bash -c", "bash -c 'echo hi'", nil},
		{"bash -c unknown", "bash -c 'python3 x.py'", shell.ErrUnsupported},
		{"sh -c", "sh -c 'echo'", shell.ErrUnsupported},
		{"bash -c syntax", "bash -c 'if'", shell.ErrUnsupported},
		{"which", "which upper", nil},
		{"keywords", "if true; then :; fi; while false; do :; done; case a in a) ;; esac", nil},
		{"arith and test", "(( x++ )); [[ a == b ]]; [ -f x ]; let y=1", nil},
		{"declare family", "declare -A m; local x; export Y=1; readonly Z", nil},
		{"heredoc", "upper <<EOF\nhi\nEOF", nil},
		{"heredoc quoted", "upper <<'EOF'\n$x\nEOF", nil},
		{"heredoc partly quoted", "upper <<E\"O\"F\n$x\nEOF", shell.ErrUnsupported},
		{"tilde after =", "echo foo=~/x", shell.ErrUnsupported},
		{"function body simple", "f() echo x", shell.ErrUnsupported},
		{"function body compound", "f() ( echo x ); g() [[ -n x ]]", nil},
		{"process subst", "upper < <(echo x)", nil},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sh.Check(tc.script)
			switch {
			case tc.want == nil && err != nil:
				t.Errorf("Check(%q) = %v, want nil", tc.script, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("Check(%q) = %v, want %v", tc.script, err, tc.want)
			}
		})
	}
}

// TestCheckLogicalPWD: an inherited PWD that names the working directory
// by another path (E2B's /home/user for /workspace) is what bash's pwd
// prints and what its cd .. leaves; the isolate tier knows only the
// directory, so those go to the container and the rest stays here.
func TestCheckLogicalPWD(t *testing.T) {
	sh := shell.New(shell.Config{})
	tests := []struct {
		name   string
		script string
		env    map[string]string
		want   error
	}{
		{"pwd", "pwd", nil, nil},
		{"pwd, same PWD", "pwd", map[string]string{"PWD": "/workspace"}, nil},
		{"pwd, logical PWD", "pwd", map[string]string{"PWD": "/home/user"}, shell.ErrUnsupported},
		{"pwd -P, logical PWD", "pwd -P", map[string]string{"PWD": "/home/user"}, shell.ErrUnsupported},
		{"echo, logical PWD", "echo hi; echo \"$PWD\"", map[string]string{"PWD": "/home/user"}, nil},
		{"cd .., logical PWD", "cd ..", map[string]string{"PWD": "/home/user"}, shell.ErrUnsupported},
		{"cd sub, logical PWD", "cd sub", map[string]string{"PWD": "/home/user"}, shell.ErrUnsupported},
		{"cd absolute, logical PWD", "cd /tmp", map[string]string{"PWD": "/home/user"}, nil},
		{"cd sub, same PWD", "cd sub", map[string]string{"PWD": "/workspace"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sh.CheckProgram(shell.CheckRequest{Script: tc.script, Dir: "/workspace", Env: tc.env})
			switch {
			case tc.want == nil && err != nil:
				t.Errorf("CheckProgram(%q, PWD %q) = %v, want nil", tc.script, tc.env["PWD"], err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("CheckProgram(%q, PWD %q) = %v, want %v", tc.script, tc.env["PWD"], err, tc.want)
			}
		})
	}
}

// The environment an exec adds: what bash or the tools would read
// differently goes to the container; git's HTTP transport variables
// (the network tier's GIT_SSL_CAINFO, on every sandbox of a daemon that
// has one) are inert in the tier, whose git has no remotes, and admitted.
func TestCheckEnv(t *testing.T) {
	sh := shell.New(shell.Config{})
	tests := []struct {
		env  map[string]string
		want error
	}{
		{map[string]string{"GIT_SSL_CAINFO": "/etc/ssl/certs/ca-certificates.crt"}, nil},
		{map[string]string{"GIT_HTTP_USER_AGENT": "agent/1"}, nil},
		{map[string]string{"SSL_CERT_FILE": "/x", "NODE_EXTRA_CA_CERTS": "/x", "PIP_CERT": "/x"}, nil},
		{map[string]string{"GIT_DIR": "/tmp/elsewhere"}, shell.ErrUnsupported},
		{map[string]string{"GIT_SSL_CAINFO": "/x", "GIT_AUTHOR_NAME": "someone"}, shell.ErrUnsupported},
		{map[string]string{"LC_ALL": "C"}, shell.ErrUnsupported},
		{map[string]string{"BASH_FUNC_f%%": "() { echo; }"}, shell.ErrUnsupported},
	}
	for _, tc := range tests {
		_, err := sh.CheckProgram(shell.CheckRequest{Script: "echo \"$GIT_SSL_CAINFO\"", Dir: "/workspace", Env: tc.env})
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("CheckProgram with env %v = %v, want nil", tc.env, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("CheckProgram with env %v = %v, want %v", tc.env, err, tc.want)
		}
	}
}
