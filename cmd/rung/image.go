package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rung.dev/rung/image"
)

// The image verbs work on the local data directory's image store (as
// root, on the daemon's machine); the daemon reads images from the same
// store, so a built or imported image is usable at once.
func newImage() *cobra.Command {
	var data string
	cmd := &cobra.Command{Use: "image", Short: "build, import, list and remove container images"}
	cmd.PersistentFlags().StringVar(&data, "data", "", "data directory (default $RUNG_DATA or /var/lib/rung)")
	open := func() (*image.Store, error) {
		return image.Open(filepath.Join(dataDir(data), "images"), nil)
	}
	progress := func(line string) { fmt.Fprintln(os.Stderr, line) }

	build := &cobra.Command{
		Use:       "build lite|debian",
		Short:     "build a built-in image from Debian packages (debian takes minutes)",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"lite", "debian"},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			var im image.Image
			switch args[0] {
			case "lite":
				im, err = s.BuildLite(cmd.Context(), progress)
			case "debian":
				im, err = s.BuildDebian(cmd.Context(), image.DebianConfig{}, progress)
			default:
				return fmt.Errorf("unknown built-in image %q (want lite or debian)", args[0])
			}
			if err != nil {
				return err
			}
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
		Short: "list images with their pinned digests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			list, err := s.List()
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIGEST\tLAYERS\tSIZE\tCREATED")
			for _, im := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d MB\t%s\n", im.Name, im.Digest, len(im.Layers), im.SizeBytes/1e6, im.Created.Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "remove an image and the layers no other image uses",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			return s.Remove(args[0])
		},
	}
	cmd.AddCommand(build, imp, ls, rm)
	return cmd
}
