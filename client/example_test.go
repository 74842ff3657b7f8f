package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/api"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
	"rung.dev/rung/storage"
	"rung.dev/rung/store/sqlite"
)

// addr and token point the examples at a real daemon that TestMain starts
// (controller, SQLite, a btrfs pool in a temporary directory).
var addr, token string

func ExampleClient_Exec() {
	ctx := context.Background()
	c := client.New(addr, client.WithToken(token))
	sb, err := c.Create(ctx, client.CreateRequest{Labels: map[string]string{"example": "exec"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Delete(ctx, string(sb.ID))
	res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "echo hello; exit 3", Backend: rung.BackendIsolate})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q exit %d on %s\n", res.Stdout, res.ExitCode, res.Backend)
	// Output: "hello\n" exit 3 on isolate
}

func ExampleClient_WriteFile() {
	ctx := context.Background()
	c := client.New(addr, client.WithToken(token))
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Delete(ctx, string(sb.ID))
	if _, err := c.WriteFile(ctx, string(sb.ID), "notes/todo.txt", strings.NewReader("ship it\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	r, err := c.ReadFile(ctx, string(sb.ID), "/workspace/notes/todo.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	fmt.Printf("%s", b)
	// Output: ship it
}

func ExampleError() {
	ctx := context.Background()
	c := client.New(addr, client.WithToken(token))
	_, err := c.Get(ctx, "no-such-sandbox")
	fmt.Println(errors.Is(err, rung.ErrNotFound))
	// Output: true
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, err := exec.LookPath("mkfs.btrfs")
	if os.Geteuid() != 0 || err != nil {
		if os.Getenv("RUNG_REQUIRE_ALL") == "1" {
			fmt.Fprintln(os.Stderr, "client examples need root and mkfs.btrfs (RUNG_REQUIRE_ALL=1)")
			return 1
		}
		fmt.Fprintln(os.Stderr, "skipping client examples: they need root and mkfs.btrfs")
		return 0
	}
	dir, err := os.MkdirTemp("", "rung-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	pool, err := storage.Open(ctx, storage.PoolConfig{Dir: dir, ImageSize: 1 << 30})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rung.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	ctrl, _, err := controller.New(ctx, controller.Config{Store: st, Pool: pool})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ctrl.Close()
	if token, _, err = ctrl.Bootstrap(ctx, filepath.Join(dir, "token")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := httptest.NewServer(api.New(api.Config{Controller: ctrl}))
	defer srv.Close()
	addr = srv.URL
	return m.Run()
}
