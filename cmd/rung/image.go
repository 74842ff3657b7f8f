package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"rung.dev/rung"
	"rung.dev/rung/image"
	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
)

// The image verbs work on the local data directory's image store (as
// root, on the daemon's machine); the daemon reads images from the same
// store, so a built or imported image is usable at once. A build or
// import adds a version and keeps the older ones, so sandboxes pinned to
// them still start; rm refuses versions a sandbox uses.
func newImage() *cobra.Command {
	var data string
	cmd := &cobra.Command{Use: "image", Short: "build, import, list and remove container images"}
	cmd.PersistentFlags().StringVar(&data, "data", "", "data directory (default $RUNG_DATA or /var/lib/rung)")
	open := func() (*image.Store, error) {
		return image.Open(filepath.Join(dataDir(data), "images"), nil)
	}
	build := &cobra.Command{
		Use:       "build lite|base|debian",
		Short:     "build a built-in image (lite from busybox-static in seconds; base and debian with debootstrap from Debian's mirror, minutes)",
		Long:      "Build a built-in image as a new version. lite is busybox (tests, benchmarks); base is the daemon's default: Debian 12 with the tools agents use and the unprivileged user `user` (about five minutes); debian is a smaller Debian. Progress goes to stderr: one updating line on a terminal, plain lines otherwise.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: image.Builtins,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !image.IsBuiltin(args[0]) {
				return fmt.Errorf("unknown built-in image %q (want lite, base or debian)", args[0])
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			show := newBuildDisplay(args[0], os.Stderr, func(p image.BuildProgress, elapsed time.Duration) {
				fmt.Fprintln(os.Stderr, progressText(args[0], p, elapsed))
			})
			start := time.Now()
			im, err := s.Build(cmd.Context(), args[0], show.line)
			show.stop()
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "built %s in %s: %d MB\n", im.Ref(), time.Since(start).Truncate(time.Second), im.SizeBytes/1e6)
			fmt.Println(im.Ref())
			return nil
		},
	}
	var name string
	imp := &cobra.Command{
		Use:   "import FILE|DIR --name NAME",
		Short: "import an OCI layout, an OCI or docker-save tarball, or a root filesystem (dir or tarball)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			im, err := s.Import(cmd.Context(), name, args[0])
			if err != nil {
				return err
			}
			fmt.Println(im.Ref())
			return nil
		},
	}
	imp.Flags().StringVar(&name, "name", "", "image name (required)")
	imp.MarkFlagRequired("name")
	var asJSON bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "list every kept image version with its digest; CURRENT marks the one a bare name starts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			list, err := s.List()
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIGEST\tCURRENT\tLAYERS\tSIZE\tCREATED")
			for _, v := range list {
				current := ""
				if v.Current {
					current = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d MB\t%s\n", v.Name, v.ShortDigest(), current, len(v.Layers), v.SizeBytes/1e6, v.Created.Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON (full digests)")
	rm := &cobra.Command{
		Use:   "rm NAME|NAME@sha256:DIGEST",
		Short: "remove every version of an image, or one, and the layers no kept version uses; refused while a sandbox uses it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pinned, err := sandboxImages(cmd.Context(), dataDir(data))
			if err != nil {
				return err
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			gone, err := s.Remove(args[0], pinned)
			for _, im := range gone {
				fmt.Println("removed", im.Ref())
			}
			return err
		},
	}
	cmd.AddCommand(build, imp, ls, rm)
	return cmd
}

// sandboxImages returns the image reference of every sandbox in the data
// directory's metadata store (the daemon's, which may be running: SQLite
// in WAL mode takes a second process), "lite" for a sandbox created
// without one, as the container tier starts it. No store means no
// sandboxes. A sandbox created between this read and the removal is not
// seen; only a removal made by the daemon itself could close that window.
func sandboxImages(ctx context.Context, data string) ([]string, error) {
	path := filepath.Join(data, "rung.db")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("read sandboxes: %w", err)
	}
	defer st.Close()
	sbs, err := st.ListSandboxes(ctx, store.Filter{})
	if err != nil {
		return nil, fmt.Errorf("read sandboxes: %w", err)
	}
	refs := make([]string, 0, len(sbs))
	for _, sb := range sbs {
		if sb.State != rung.StateDeleted {
			refs = append(refs, cmp.Or(sb.Image, "lite"))
		}
	}
	return refs, nil
}
