package agent_test

import (
	"os"
	"syscall"
	"testing"

	"rung.dev/rung/agent"
	"rung.dev/rung/internal/testenv"
)

// Commands and background processes run with the uid, gid and
// supplementary groups they ask for (and only those), and as the agent's
// own root without one.
func TestExecAsUser(t *testing.T) {
	testenv.Require(t, "root")
	c := startAgent(t)
	ids := "id -u; id -g; id -G"
	env := []string{"PATH=/usr/bin:/bin"}
	tests := []struct {
		name string
		user *agent.Credential
		want string
	}{
		{"agent's own", nil, "0\n0\n"},
		{"user and groups", &agent.Credential{UID: 65534, GID: 65533, Groups: []uint32{100, 4242}}, "65534\n65533\n65533 100 4242\n"},
		{"no supplementary groups", &agent.Credential{UID: 4243, GID: 4244}, "4243\n4244\n4244\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, c, agent.ExecRequest{Command: ids, Env: env, Dir: "/", User: tc.user})
			if tc.user == nil {
				// root's groups are the host's: only uid and gid are known.
				if got.Exit.Code != 0 || len(got.Stdout) < len(tc.want) || got.Stdout[:len(tc.want)] != tc.want {
					t.Errorf("as root: %+v", got)
				}
				return
			}
			if got.Stdout != tc.want || got.Exit.Code != 0 {
				t.Errorf("%s = %q (exit %+v, stderr %q), want %q", ids, got.Stdout, got.Exit, got.Stderr, tc.want)
			}
		})
	}

	// A background process too; its file shows who made it.
	// Not under t.TempDir, whose parent only root may enter.
	dir, err := os.MkdirTemp("", "rung-agent-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	info, err := c.StartProcess(t.Context(), agent.ProcessRequest{Command: "touch made", Dir: dir, Env: env, User: &agent.Credential{UID: 4245, GID: 4246}})
	if err != nil {
		t.Fatal(err)
	}
	exit, err := c.Output(t.Context(), info.ID, 0, true, func(agent.Frame) {})
	if err != nil || exit == nil || exit.Code != 0 {
		t.Fatalf("process: exit %+v, %v", exit, err)
	}
	fi, err := os.Stat(dir + "/made")
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := owner(fi); uid != 4245 || gid != 4246 {
		t.Errorf("the process's file is owned by %d:%d, want 4245:4246", uid, gid)
	}
}

func owner(fi os.FileInfo) (uid, gid uint32) {
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
