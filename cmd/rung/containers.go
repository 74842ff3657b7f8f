package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
	"rung.dev/rung/image"
	"rung.dev/rung/storage"
)

// openContainers wires the container tier: the image store under data
// (building "lite" on first start: seconds), the fastest working OCI
// runtime among runc and crun (probed at start-up), runsc for isolation
// "gvisor" when installed, and the agent binary. It reaps containers a
// crashed daemon left. A host that cannot run containers gets a nil
// tier and a reason; the daemon then serves the isolate tier alone.
func openContainers(ctx context.Context, data string, pool *storage.Pool, agentBin string, stopGrace time.Duration, log *slog.Logger) (*controller.Containers, string) {
	if agentBin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err.Error()
		}
		agentBin = exe
	}
	if err := container.CheckStatic(agentBin); err != nil {
		return nil, err.Error()
	}
	images, err := image.Open(filepath.Join(data, "images"), log)
	if err != nil {
		return nil, err.Error()
	}
	lite, err := images.Get("lite")
	if err != nil {
		if lite, err = images.BuildLite(ctx, nil); err != nil {
			return nil, fmt.Sprintf("build the lite image: %v", err)
		}
		log.Info("built image", "image", lite.Ref())
	}
	state := filepath.Join(data, "containers")
	candidates := []container.Runtime{{Name: "runc", Binary: "runc"}, container.Crun("crun")}
	rt, results, err := container.Probe(ctx, images.LowerDirs(lite)[0], filepath.Join(state, "probe"), candidates)
	if err != nil {
		return nil, err.Error()
	}
	for _, r := range results {
		log.Info("runtime probe", "runtime", r.Runtime, "ok", r.OK, "median", r.Median, "err", r.Error)
	}
	newManager := func(rt container.Runtime) (*container.Manager, error) {
		return container.NewManager(container.Config{StateDir: filepath.Join(state, rt.Name), Runtime: rt, Images: images, AgentBinary: agentBin, StopGrace: stopGrace, Logger: log})
	}
	runc, err := newManager(rt)
	if err != nil {
		return nil, err.Error()
	}
	reapStale(ctx, runc, log)
	// An earlier daemon's probe may have picked the other runtime (their
	// medians are close here): its containers are reaped too.
	for _, other := range candidates {
		if other.Name == rt.Name {
			continue
		}
		if _, err := os.Stat(filepath.Join(state, other.Name)); err != nil {
			continue
		}
		if m, err := newManager(other); err == nil {
			reapStale(ctx, m, log)
		}
	}
	tier := &controller.Containers{Runc: runc, Images: images, Pool: pool}
	if path, err := exec.LookPath("runsc"); err == nil {
		gv, err := container.NewManager(container.Config{StateDir: filepath.Join(state, "runsc"), Runtime: container.GVisor(path), Images: images, AgentBinary: agentBin, StopGrace: stopGrace, Logger: log})
		if err == nil {
			reapStale(ctx, gv, log)
			tier.GVisor = gv
		}
	}
	log.Info("container tier ready", "runtime", rt.Name, "gvisor", tier.GVisor != nil, "image", lite.Ref())
	return tier, ""
}

// reapStale removes what an earlier daemon left in m's state and logs it.
func reapStale(ctx context.Context, m *container.Manager, log *slog.Logger) {
	if reaped, err := m.ReapStale(ctx); err != nil {
		log.Warn("reap stale containers", "err", err)
	} else if len(reaped) > 0 {
		log.Info("reaped containers left by an earlier daemon", "count", len(reaped))
	}
}

// imageChecker resolves a create request's image against the store and
// the allowlist: <data>/allowlist.json when it exists (an
// image.Allowlist: tenant -> ["name@sha256:…"], "*" for every tenant),
// otherwise every image in the store, pinned at its current digest. The
// result is the pinned reference the sandbox keeps.
func imageChecker(data string, images *image.Store) func(rung.TenantID, string) (string, error) {
	path := filepath.Join(data, "allowlist.json")
	return func(tenant rung.TenantID, ref string) (string, error) {
		if ref == "" {
			ref = "lite"
		}
		im, err := images.Get(ref)
		if err != nil {
			// A name the server has, pinned to a digest it does not keep,
			// is refused like a digest the allowlist does not pin.
			if name, digest, _ := image.ParseRef(ref); digest != "" && errors.Is(err, rung.ErrNotFound) {
				if _, nerr := images.Get(name); nerr == nil {
					return "", rung.Errorf(rung.ErrPermission, "image %s has no version %s on this server", name, digest)
				}
			}
			return "", err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return im.Ref(), nil
		}
		if err != nil {
			return "", fmt.Errorf("read allowlist: %w", err)
		}
		var al image.Allowlist
		if err := json.Unmarshal(b, &al); err != nil {
			return "", fmt.Errorf("read allowlist %s: %w", path, err)
		}
		if err := al.Check(tenant, im); err != nil {
			return "", err
		}
		return im.Ref(), nil
	}
}
