package storage_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

const mib = 1 << 20

func isQuotaErr(err error) bool {
	return errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.ENOSPC)
}

func TestQuota(t *testing.T) {
	for _, mode := range []string{storage.QuotaSimple, storage.QuotaFull} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := storagetest.NewTestPoolConfig(t, storage.PoolConfig{Quotas: mode})
			if got := p.QuotaMode(); got != mode {
				t.Fatalf("QuotaMode = %q, want %q", got, mode)
			}
			testQuota(t, p)
		})
	}
}

func testQuota(t *testing.T, p *storage.Pool) {
	ctx := t.Context()
	const limit = 16 * mib
	must(t, p.Create(ctx, "sbx_a"))
	must(t, p.Create(ctx, "sbx_b"))
	must(t, p.SetQuota(ctx, "sbx_a", limit))
	u, err := p.Usage(ctx, "sbx_a")
	must(t, err)
	if u.Limit != limit {
		t.Errorf("Usage.Limit = %d, want %d", u.Limit, limit)
	}

	// Through the isolate tier's file view.
	r, err := p.Root("sbx_a")
	must(t, err)
	defer r.Close()
	f, err := r.OpenFile("/workspace/big", os.O_CREATE|os.O_WRONLY, 0o644)
	must(t, err)
	n, err := storagetest.Fill(f, 4*limit)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	f.Close()
	if !isQuotaErr(err) {
		t.Fatalf("writing past the quota through Root: wrote %d bytes, err %v; want EDQUOT", n, err)
	}
	if n > limit {
		t.Errorf("wrote %d bytes through Root under a %d quota", n, limit)
	}

	// Through plain os writes, as a container would.
	f2, err := os.Create(filepath.Join(p.Path("sbx_a"), "fs/tmp/more"))
	if err == nil {
		n, err = storagetest.Fill(f2, 4*limit)
		f2.Close()
	}
	if !isQuotaErr(err) {
		t.Fatalf("writing past the quota with os: err %v; want EDQUOT", err)
	}

	// The full sandbox does not stop another one.
	fb, err := os.Create(filepath.Join(p.Path("sbx_b"), "fs/workspace/f"))
	must(t, err)
	if n, err := storagetest.Fill(fb, 2*limit); err != nil {
		t.Errorf("sandbox b wrote %d bytes then %v while a was at its quota", n, err)
	}
	must(t, fb.Sync())
	fb.Close()

	must(t, p.Sync(ctx))
	u, err = p.Usage(ctx, "sbx_a")
	must(t, err)
	if u.Bytes > limit || u.Bytes < limit/2 {
		t.Errorf("usage of the full sandbox = %d, want about %d and at most that", u.Bytes, limit)
	}
	if used, err := p.UsedBytes(ctx, "sbx_a"); err != nil || used != u.Bytes {
		t.Errorf("UsedBytes = %d, %v; want Usage's Bytes, %d", used, err, u.Bytes)
	}

	// Freeing space makes room again.
	must(t, r.Remove("/workspace/big"))
	must(t, p.Sync(ctx))
	f3, err := r.OpenFile("/workspace/again", os.O_CREATE|os.O_WRONLY, 0o644)
	must(t, err)
	if n, err := storagetest.Fill(f3, 4*mib); err != nil {
		t.Errorf("after freeing space wrote %d bytes then %v", n, err)
	}
	f3.Close()

	// Forks and snapshots carry the limit.
	must(t, p.Snapshot(ctx, "sbx_a", "snp_a"))
	must(t, p.Fork(ctx, "snp_a", "sbx_c"))
	for _, n := range []string{"snp_a", "sbx_c"} {
		u, err := p.Usage(ctx, n)
		must(t, err)
		if u.Limit != limit {
			t.Errorf("Usage(%s).Limit = %d, want %d", n, u.Limit, limit)
		}
	}

	// Removing the limit lets the sandbox write past it.
	must(t, p.SetQuota(ctx, "sbx_c", 0))
	fc, err := os.Create(filepath.Join(p.Path("sbx_c"), "fs/workspace/x"))
	must(t, err)
	if n, err := storagetest.Fill(fc, 2*limit); err != nil {
		t.Errorf("unlimited fork wrote %d bytes then %v", n, err)
	}
	fc.Close()
	if u, _ := p.Usage(ctx, "sbx_c"); u.Limit != 0 {
		t.Errorf("Limit after SetQuota 0 = %d", u.Limit)
	}
}

// TestQuotaConcurrentWriters races several writers into one sandbox: the
// quota holds for their sum, and every writer eventually hits it.
func TestQuotaConcurrentWriters(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	const limit = 24 * mib
	must(t, p.Create(ctx, "sbx_a"))
	must(t, p.SetQuota(ctx, "sbx_a", limit))
	r, err := p.Root("sbx_a")
	must(t, err)
	defer r.Close()

	const writers = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	var errs []error
	for i := range writers {
		wg.Go(func() {
			var w io.WriteCloser
			var err error
			if i%2 == 0 {
				w, err = r.OpenFile(fmt.Sprintf("/workspace/w%d", i), os.O_CREATE|os.O_WRONLY, 0o644)
			} else {
				w, err = os.Create(filepath.Join(p.Path("sbx_a"), "fs/tmp", fmt.Sprint(i)))
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			n, err := storagetest.Fill(w, 4*limit)
			w.Close()
			mu.Lock()
			total += n
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if !isQuotaErr(err) {
			t.Errorf("writer ended with %v, want EDQUOT", err)
		}
	}
	if total > limit {
		t.Errorf("writers wrote %d bytes in all under a %d quota", total, limit)
	}
	must(t, p.Sync(ctx))
	u, err := p.Usage(ctx, "sbx_a")
	must(t, err)
	if u.Bytes > limit {
		t.Errorf("usage %d over the %d quota", u.Bytes, limit)
	}
}

func TestQuotaOff(t *testing.T) {
	p := storagetest.NewTestPoolConfig(t, storage.PoolConfig{Quotas: storage.QuotaOff})
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_a"))
	if err := p.SetQuota(ctx, "sbx_a", mib); !errors.Is(err, rung.ErrUnavailable) {
		t.Errorf("SetQuota with quotas off = %v, want ErrUnavailable", err)
	}
	if _, err := p.Usage(ctx, "sbx_a"); !errors.Is(err, rung.ErrUnavailable) {
		t.Errorf("Usage with quotas off = %v, want ErrUnavailable", err)
	}
}
