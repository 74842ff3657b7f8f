package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// A checkpoint before a risky step, a rollback after it went wrong, and
// forks that each try something else from the same state.
func ExampleClient_Rollback() {
	ctx := context.Background()
	c := client.New(addr, client.WithToken(token))
	sb, err := c.Create(ctx, client.CreateRequest{Labels: map[string]string{"example": "rollback"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	id := string(sb.ID)
	defer c.Delete(ctx, id)
	c.WriteFile(ctx, id, "notes.txt", strings.NewReader("draft 1"), 0)
	snap, err := c.Checkpoint(ctx, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.DeleteSnapshot(ctx, string(snap.ID))
	c.WriteFile(ctx, id, "notes.txt", strings.NewReader("ruined"), 0)
	if _, err := c.Rollback(ctx, id, string(snap.ID)); err != nil {
		fmt.Println(err)
		return
	}
	r, _ := c.ReadFile(ctx, id, "notes.txt")
	b, _ := io.ReadAll(r)
	r.Close()
	fmt.Println(string(b))

	forks, err := c.ForkSnapshot(ctx, string(snap.ID), client.ForkRequest{Count: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range forks {
		defer c.Delete(ctx, string(f.Sandbox.ID))
	}
	fmt.Println(len(forks), "forks")
	// Output:
	// draft 1
	// 2 forks
}

// An export is one file another rung server imports; a damaged one is
// refused whole.
func ExampleClient_ImportSnapshot() {
	ctx := context.Background()
	c := client.New(addr, client.WithToken(token))
	sb, err := c.Create(ctx, client.CreateRequest{Labels: map[string]string{"example": "export"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Delete(ctx, string(sb.ID))
	c.WriteFile(ctx, string(sb.ID), "data.txt", strings.NewReader("carried over"), 0)
	snap, err := c.Snapshot(ctx, string(sb.ID), client.SnapshotRequest{Name: "to-export"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.DeleteSnapshot(ctx, string(snap.ID))
	r, err := c.ExportSnapshot(ctx, "to-export", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	archive, _ := io.ReadAll(r)
	r.Close()
	damaged := bytes.Clone(archive)
	damaged[len(damaged)/2] ^= 1
	_, err = c.ImportSnapshot(ctx, bytes.NewReader(damaged), client.ImportOptions{Name: "copy"})
	fmt.Println(errors.Is(err, rung.ErrInvalid))
	in, err := c.ImportSnapshot(ctx, bytes.NewReader(archive), client.ImportOptions{Name: "copy"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.DeleteSnapshot(ctx, string(in.ID))
	restored, err := c.Create(ctx, client.CreateRequest{FromSnapshot: "copy"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Delete(ctx, string(restored.ID))
	f, _ := c.ReadFile(ctx, string(restored.ID), "data.txt")
	b, _ := io.ReadAll(f)
	f.Close()
	fmt.Println(string(b))
	// Output:
	// true
	// carried over
}
