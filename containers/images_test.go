package containers_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/containers"
	"rung.dev/rung/controller"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// The tier resolves "" to its default image for LoginFiles and HomeLink,
// and HomeLink takes the absolute home the sandbox's user has.
func TestLoginFilesAndHomeLink(t *testing.T) {
	testenv.Require(t, "root")
	s, err := image.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	layer := s.LayerDir(digest)
	for _, d := range []string{"etc", "home/user"} {
		if err := os.MkdirAll(filepath.Join(layer, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(layer, "etc/profile"), []byte("# profile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := s.Put("login", []string{digest}, image.Config{Env: []string{"HOME=/root", "PATH=/usr/bin:/bin"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tier := containers.New(containers.Config{Images: s, DefaultImage: "login"}, controller.ContainerEvents{})
	upper := t.TempDir()
	if err := s.LinkDir(im, upper, "/home/user", "/workspace"); err != nil {
		t.Fatal(err)
	}

	il, err := tier.LoginFiles("", upper)
	if files := il.Files; err != nil || len(files) != 1 || files[0].Path != "/etc/profile" || string(files[0].Data) != "# profile\n" || il.Path != "/usr/bin:/bin" {
		t.Errorf("LoginFiles(default image) = %v, %v; want /etc/profile and the image's PATH", il, err)
	}
	// A profile.d script the container added: the files merge it, and
	// the key changes with its text, so no kept login is taken for it.
	if err := os.MkdirAll(filepath.Join(upper, "etc/profile.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{il.Key: true}
	for _, text := range []string{"export A=1\n", "export A=2\n"} {
		if err := os.WriteFile(filepath.Join(upper, "etc/profile.d/a.sh"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := tier.LoginFiles("", upper)
		if err != nil || len(got.Files) != 3 || got.Files[2].Path != "/etc/profile.d/a.sh" || string(got.Files[2].Data) != text {
			t.Fatalf("LoginFiles with an upper profile.d script = %v, %v", got.Files, err)
		}
		if keys[got.Key] || !strings.HasPrefix(got.Key, il.Key+"+upper:") {
			t.Errorf("key %q with upper text %q: want a new one after %q", got.Key, text, il.Key)
		}
		keys[got.Key] = true
	}
	if err := os.RemoveAll(filepath.Join(upper, "etc")); err != nil {
		t.Fatal(err)
	}
	if got, err := tier.LoginFiles("", upper); err != nil || got.Key != il.Key {
		t.Errorf("LoginFiles without upper /etc: key %q, %v; want %q", got.Key, err, il.Key)
	}
	if _, err := tier.LoginFiles("missing", upper); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("LoginFiles(missing image): %v, want ErrNotFound", err)
	}
	tests := []struct {
		name, ref, home, want string
		err                   error
	}{
		{"default image", "", "/home/user", "/workspace", nil},
		{"named image", "login", "/home/user", "/workspace", nil},
		{"no link", "", "/home/other", "", nil},
		{"relative home", "", "home/user", "", rung.ErrInvalid},
		{"root", "", "/", "", rung.ErrInvalid},
		{"missing image", "missing", "/home/user", "", rung.ErrNotFound},
	}
	for _, tc := range tests {
		got, err := tier.HomeLink(tc.ref, upper, tc.home)
		if got != tc.want || (tc.err == nil) != (err == nil) || !errors.Is(err, tc.err) {
			t.Errorf("%s: HomeLink(%q, %q) = %q, %v; want %q, %v", tc.name, tc.ref, tc.home, got, err, tc.want, tc.err)
		}
	}
}
