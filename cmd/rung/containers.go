package main

import (
	"cmp"
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
	"rung.dev/rung/containers"
	"rung.dev/rung/image"
	"rung.dev/rung/storage"
)

// openContainers wires the container tier: the image store (building
// "lite" on first start, in seconds, and the default image when it is
// missing: see [DaemonConfig].DefaultImage), the fastest working OCI
// runtime among runc and crun (probed at start-up), runsc for isolation
// "gvisor" when installed, and the agent binary: what [containers.New]
// makes the tier of. Containers an earlier daemon left are the
// controller's to adopt or reap; the runtime they run under stays the
// choice. A host that cannot run containers gets a nil config and a
// reason; the daemon then serves the isolate tier alone. An error
// (a default image that is neither built in nor in the store) stops the
// daemon.
func openContainers(ctx context.Context, cfg DaemonConfig, pool *storage.Pool, log *slog.Logger) (*containers.Config, string, error) {
	data, agentBin, stopGrace := cfg.Data, cfg.AgentBinary, cfg.StopGrace
	if agentBin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err.Error(), nil
		}
		agentBin = exe
	}
	if err := container.CheckStatic(agentBin); err != nil {
		return nil, err.Error(), nil
	}
	dir := cfg.ImageDir
	if dir == "" {
		dir = filepath.Join(data, "images")
	}
	images, err := image.Open(dir, log)
	if err != nil {
		return nil, err.Error(), nil
	}
	lite, built, err := images.Ensure(ctx, "lite", nil)
	if err != nil {
		return nil, fmt.Sprintf("build the lite image: %v", err), nil
	}
	if built {
		log.Info("built image", "image", lite.Ref())
	}
	state := filepath.Join(data, "containers")
	candidates := []container.Runtime{{Name: "runc", Binary: "runc"}, container.Crun("crun")}
	newManager := func(rt container.Runtime) (*container.Manager, error) {
		return container.NewManager(container.Config{StateDir: filepath.Join(state, rt.Name), Runtime: rt, Images: images, AgentBinary: agentBin, StopGrace: stopGrace, Logger: log})
	}
	// Live restore: containers an earlier daemon left are adopted by a
	// manager of their runtime, so that runtime stays the choice while it
	// works, whatever the probe would say today.
	probeSet := candidates
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(state, c.Name)); err != nil {
			continue
		}
		if m, err := newManager(c); err == nil && m.Left() {
			probeSet = []container.Runtime{c}
			log.Info("runtime kept for containers an earlier daemon left", "runtime", c.Name)
			break
		}
	}
	rt, results, err := container.Probe(ctx, images.LowerDirs(lite)[0], filepath.Join(state, "probe"), probeSet)
	if err != nil && len(probeSet) < len(candidates) {
		rt, results, err = container.Probe(ctx, images.LowerDirs(lite)[0], filepath.Join(state, "probe"), candidates)
	}
	if err != nil {
		return nil, err.Error(), nil
	}
	for _, r := range results {
		log.Info("runtime probe", "runtime", r.Runtime, "ok", r.OK, "median", r.Median, "err", r.Error)
	}
	// Only a host that runs containers needs the default image: build it
	// (minutes, for base) after the probe, not before.
	defaultImage, err := ensureDefaultImage(ctx, images, cmp.Or(cfg.DefaultImage, "lite"), cfg.Terminal, log)
	if err != nil {
		images.Close()
		return nil, "", err
	}
	runc, err := newManager(rt)
	if err != nil {
		return nil, err.Error(), nil
	}
	// The chosen runtime's leftovers are adopted or reaped by the
	// controller once it has read the sandboxes (controller/adopt.go, containers/tier.go). An
	// earlier daemon's probe may have picked the other runtime (their
	// medians are close here): its containers are reaped now.
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
	tier := &containers.Config{Runc: runc, Images: images, Pool: pool, DefaultImage: defaultImage, Logger: log}
	if path, err := exec.LookPath("runsc"); err == nil {
		gv, err := container.NewManager(container.Config{StateDir: filepath.Join(state, "runsc"), Runtime: container.GVisor(path), Images: images, AgentBinary: agentBin, StopGrace: stopGrace, Logger: log})
		if err == nil {
			tier.GVisor = gv // adopted or reaped like runc's
		}
	}
	log.Info("container tier ready", "runtime", rt.Name, "gvisor", tier.GVisor != nil, "default_image", defaultImage)
	return tier, "", nil
}

// ensureDefaultImage makes sure image name, the default of new
// sandboxes, is in the store, building it if it is built in (see
// [image.Store.Ensure]: base takes minutes), and returns the name new
// sandboxes get. A build that fails (no route to Debian's mirror, say)
// is reported, on term as well when it is a terminal, and lite serves
// instead until a later start or `rung image build` makes it. A missing
// image that is not built in is an error.
func ensureDefaultImage(ctx context.Context, images *image.Store, name string, term *os.File, log *slog.Logger) (string, error) {
	if name == "lite" {
		return name, nil // Ensured already, for the probe
	}
	if _, err := images.Get(name); err == nil {
		return name, nil
	}
	if !image.IsBuiltin(name) {
		return "", fmt.Errorf("default image %s is not in the image store (rung image import FILE --name %s, or --default-image lite, base or debian)", name, name)
	}
	log.InfoContext(ctx, "building the default image: a Debian build takes minutes, once", "image", name)
	start := time.Now()
	show := newBuildDisplay(name, term, func(p image.BuildProgress, elapsed time.Duration) {
		log.InfoContext(ctx, "building image", "image", name, "stage", p.Stage, "step", p.Step, "done", p.Done, "total", p.Total, "elapsed", elapsed.Truncate(time.Second).String())
	})
	im, _, err := images.Ensure(ctx, name, show.line)
	show.stop()
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		log.WarnContext(ctx, "default image unavailable: new sandboxes get lite until it is built (rung image build "+name+", or restart rung serve)", "image", name, "err", err)
		if show.term != nil {
			fmt.Fprintf(term, "rung: could not build image %s, so new sandboxes get lite (busybox) for now; run `rung image build %s` or restart rung serve to try again. The build said:\n%v\n", name, name, err)
		}
		return "lite", nil
	}
	log.InfoContext(ctx, "built image", "image", im.Ref(), "duration", time.Since(start).Truncate(time.Second).String(), "size_bytes", im.SizeBytes)
	return name, nil
}

// reapStale removes what an earlier daemon left in m's state and logs it.
func reapStale(ctx context.Context, m *container.Manager, log *slog.Logger) {
	if reaped, err := m.ReapStale(ctx); err != nil {
		log.Warn("reap stale containers", "err", err)
	} else if len(reaped) > 0 {
		log.Info("reaped containers left by an earlier daemon", "count", len(reaped))
	}
}

// imageChecker resolves a create request's image (defaultImage when it
// names none) against the store and the allowlist: <data>/allowlist.json
// when it exists (an image.Allowlist: tenant -> ["name@sha256:…"], "*"
// for every tenant), otherwise every image in the store, pinned at its
// current digest. The result is the pinned reference the sandbox keeps.
// An image the store lacks is rung.ErrInvalid naming it.
func imageChecker(data string, images *image.Store, defaultImage string) func(rung.TenantID, string) (string, error) {
	path := filepath.Join(data, "allowlist.json")
	return func(tenant rung.TenantID, ref string) (string, error) {
		if ref == "" {
			ref = defaultImage
		}
		im, err := images.Get(ref)
		if err != nil {
			// A name the server has, pinned to a digest it does not keep,
			// is refused like a digest the allowlist does not pin.
			name, digest, _ := image.ParseRef(ref)
			if digest != "" && errors.Is(err, rung.ErrNotFound) {
				if _, nerr := images.Get(name); nerr == nil {
					return "", rung.Errorf(rung.ErrPermission, "image %s has no version %s on this server", name, digest)
				}
			}
			if errors.Is(err, rung.ErrNotFound) {
				return "", rung.Errorf(rung.ErrInvalid, "unknown image %q: this server has no such image", ref)
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
