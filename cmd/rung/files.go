package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newPut(g *globals) *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:   "put SANDBOX PATH",
		Short: "Write stdin to a file in a sandbox (relative paths are under /workspace)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var m fs.FileMode
			if mode != "" {
				v, err := strconv.ParseUint(mode, 8, 32)
				if err != nil {
					return fmt.Errorf("--mode %q: want octal such as 0644", mode)
				}
				m = fs.FileMode(v)
			}
			_, err = c.WriteFile(cmd.Context(), args[0], args[1], os.Stdin, m)
			return err
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "", "permission bits in octal (default 0644)")
	return cmd
}

func newGet(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get SANDBOX PATH",
		Short: "Print a file of a sandbox to stdout",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			r, err := c.ReadFile(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = io.Copy(os.Stdout, r)
			return err
		},
	}
}

func newFiles(g *globals) *cobra.Command {
	var recursive, asJSON bool
	cmd := &cobra.Command{
		Use:   "files SANDBOX [PATH]",
		Short: "List files of a sandbox (default /workspace)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p := ""
			if len(args) == 2 {
				p = args[1]
			}
			list, err := c.ListFiles(cmd.Context(), args[0], p, recursive)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(list)
			}
			for _, f := range list {
				suffix := ""
				switch f.Type {
				case "dir":
					suffix = "/"
				case "symlink":
					suffix = " -> " + f.Target
				}
				fmt.Printf("%s %10d %s%s\n", f.Mode, f.Size, f.Path, suffix)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "list the whole tree")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// splitRemote parses "SANDBOX:PATH".
func splitRemote(s string) (sandbox, path string, ok bool) {
	sb, p, ok := strings.Cut(s, ":")
	if !ok || sb == "" || strings.Contains(sb, "/") {
		return "", "", false
	}
	return sb, p, true
}

func newCp(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy a local directory into a sandbox or back (SANDBOX:PATH on one side; directories travel as tar)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if sb, p, ok := splitRemote(args[1]); ok {
				pr, pw := io.Pipe()
				go func() { pw.CloseWithError(writeLocalTar(args[0], pw)) }() // ends when the tree is written or the upload fails
				err := c.UploadTar(ctx, sb, p, pr)
				pr.Close()
				return err
			}
			if sb, p, ok := splitRemote(args[0]); ok {
				r, err := c.DownloadTar(ctx, sb, p)
				if err != nil {
					return err
				}
				defer r.Close()
				return readLocalTar(args[1], r)
			}
			return fmt.Errorf("cp: one side must be SANDBOX:PATH")
		},
	}
}
