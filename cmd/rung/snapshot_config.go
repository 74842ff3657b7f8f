package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"rung.dev/rung/controller"
)

// loadSnapshotPolicies reads the tenants' snapshot policies (retention,
// count and byte caps) from <data>/snapshots.json (see
// [controller.ParseSnapshotPolicies]), once. Without the file every tenant
// gets [controller.DefaultSnapshotPolicy]; a malformed file is an error
// naming the file and the field.
func loadSnapshotPolicies(ctx context.Context, data string, log *slog.Logger) (controller.SnapshotPolicies, error) {
	path := filepath.Join(data, "snapshots.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return controller.SnapshotPolicies{}, nil
	}
	if err != nil {
		return controller.SnapshotPolicies{}, fmt.Errorf("snapshot policy: %w", err)
	}
	p, err := controller.ParseSnapshotPolicies(b)
	if err != nil {
		return controller.SnapshotPolicies{}, fmt.Errorf("snapshot policy %s: %w", path, err)
	}
	log.InfoContext(ctx, "snapshot policy loaded", "path", path, "tenants", len(p.Tenants))
	return p, nil
}

// faultPoint returns the controller's fault hook for crash tests: with
// $RUNG_FAULT set to one of the controller's named steps ("snapshot.row",
// "snapshot.subvolume", "fork.row", "fork.subvolume",
// "rollback.exchanged", "import.row", "import.receiving",
// "import.received"), the daemon kills itself with SIGKILL the first time
// it reaches that step, as a `kill -9` there would. Unset, it is nil.
func faultPoint() func(string) {
	want := os.Getenv("RUNG_FAULT")
	if want == "" {
		return nil
	}
	return func(point string) {
		if point == want {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; nothing more may happen
		}
	}
}
