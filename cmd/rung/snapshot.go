package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"rung.dev/rung/client"
)

// newSnapshotVerbs are `rung snapshot ...` and the short forms around it:
// checkpoint, rollback, fork, pause and resume.
func newSnapshotVerbs(g *globals) []*cobra.Command {
	snap := &cobra.Command{Use: "snapshot", Short: "Take, list, pin, delete, export and import snapshots"}
	snap.AddCommand(newSnapshotCreate(g), newSnapshotLs(g), newSnapshotGet(g), newSnapshotRm(g), newSnapshotPin(g),
		newSnapshotExport(g), newSnapshotImport(g), newForkCmd(g, true))
	checkpoint := &cobra.Command{
		Use:   "checkpoint SANDBOX",
		Short: "Snapshot the sandbox now (snapshot create with the defaults) and print the snapshot's id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			s, err := c.Checkpoint(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Println(s.ID)
			return nil
		},
	}
	rollback := &cobra.Command{
		Use:   "rollback SANDBOX SNAPSHOT",
		Short: "Put the snapshot's files back in place of the sandbox's (its container is stopped; id, name and journal stay)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			_, err = c.Rollback(cmd.Context(), args[0], args[1])
			return err
		},
	}
	var memory bool
	pause := &cobra.Command{
		Use:   "pause SANDBOX [--memory]",
		Short: "Stop the sandbox's container and keep its files (memory and processes are not kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return c.Pause(cmd.Context(), args[0], memory)
		},
	}
	pause.Flags().BoolVar(&memory, "memory", false, "keep memory and processes too (not available on this server: it says why)")
	resume := &cobra.Command{
		Use:   "resume SANDBOX",
		Short: "Start a paused sandbox's container again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			_, err = c.Resume(cmd.Context(), args[0])
			return err
		},
	}
	return []*cobra.Command{snap, checkpoint, rollback, newForkCmd(g, false), pause, resume}
}

func newSnapshotCreate(g *globals) *cobra.Command {
	var req client.SnapshotRequest
	var labels []string
	var ttl time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create SANDBOX [--name N] [--label k=v]... [--ttl D] [--freeze]",
		Short: "Snapshot a sandbox and print the snapshot's id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if req.Labels, err = parseKV(labels, "label"); err != nil {
				return err
			}
			req.TTLMS = ttl.Milliseconds()
			s, err := c.Snapshot(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(s)
			}
			fmt.Println(s.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Name, "name", "", "name, unique among your snapshots")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label key=value (repeatable)")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "retention, renewed by each restore or fork (default the server's, 30 days)")
	cmd.Flags().BoolVar(&req.Freeze, "freeze", false, "freeze the container's processes while the snapshot is taken")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the snapshot as JSON")
	return cmd
}

func newSnapshotLs(g *globals) *cobra.Command {
	var o client.SnapshotListOptions
	var labels []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [--sandbox S] [--name N] [--label k=v]...",
		Short: "List your snapshots",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if o.Labels, err = parseKV(labels, "label"); err != nil {
				return err
			}
			var all []client.Snapshot
			for {
				page, next, err := c.ListSnapshots(cmd.Context(), o)
				if err != nil {
					return err
				}
				all = append(all, page...)
				if next == "" {
					break
				}
				o.After = next
			}
			if asJSON {
				return printJSON(all)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSANDBOX\tBYTES\tCREATED\tEXPIRES")
			for _, s := range all {
				exp := "pinned"
				if !s.Pinned {
					exp = s.ExpiresAt.Format("2006-01-02 15:04")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Name, s.Sandbox, s.SizeBytes, s.CreatedAt.Format("2006-01-02 15:04:05"), exp)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&o.Sandbox, "sandbox", "", "only snapshots of this sandbox")
	cmd.Flags().StringVar(&o.Name, "name", "", "only the snapshot of this name")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "only snapshots with this label key=value (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSnapshotGet(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get SNAPSHOT",
		Short: "Print a snapshot as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			s, err := c.GetSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(s)
		},
	}
}

func newSnapshotRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm SNAPSHOT...",
		Short: "Delete snapshots (sandboxes made from them stay)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			for _, id := range args {
				if err := c.DeleteSnapshot(cmd.Context(), id); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func newSnapshotPin(g *globals) *cobra.Command {
	var unpin bool
	cmd := &cobra.Command{
		Use:   "pin SNAPSHOT [--unpin]",
		Short: "Keep a snapshot until it is deleted (or, with --unpin, for its TTL from now)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			_, err = c.PinSnapshot(cmd.Context(), args[0], !unpin)
			return err
		},
	}
	cmd.Flags().BoolVar(&unpin, "unpin", false, "unpin instead")
	return cmd
}

func newSnapshotExport(g *globals) *cobra.Command {
	var out, parent string
	cmd := &cobra.Command{
		Use:   "export SNAPSHOT -o FILE [--parent P]",
		Short: "Write a snapshot to one file (an archive another rung server imports); with --parent, only the changes since P",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			r, err := c.ExportSnapshot(cmd.Context(), args[0], parent)
			if err != nil {
				return err
			}
			defer r.Close()
			if out == "-" {
				_, err = io.Copy(os.Stdout, r)
				return err
			}
			// Written beside the target and renamed: an interrupted export
			// never leaves a file that looks complete.
			f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
			if err != nil {
				return err
			}
			defer os.Remove(f.Name())
			if _, err := io.Copy(f, r); err != nil {
				f.Close()
				return fmt.Errorf("export %s: %w", args[0], err)
			}
			if err := f.Close(); err != nil {
				return err
			}
			return os.Rename(f.Name(), out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (- for standard output)")
	cmd.Flags().StringVar(&parent, "parent", "", "a snapshot the importing server has: export only the changes since it")
	cmd.MarkFlagRequired("output")
	return cmd
}

func newSnapshotImport(g *globals) *cobra.Command {
	var o client.ImportOptions
	var labels []string
	cmd := &cobra.Command{
		Use:   "import FILE [--name N] [--label k=v]...",
		Short: "Import a snapshot archive (- reads standard input) and print the new snapshot's id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if o.Labels, err = parseKV(labels, "label"); err != nil {
				return err
			}
			var r io.Reader = os.Stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			s, err := c.ImportSnapshot(cmd.Context(), r, o)
			if err != nil {
				return err
			}
			fmt.Println(s.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "name (default the archived one)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label key=value (repeatable; default the archived ones)")
	return cmd
}

// newForkCmd is `rung fork SANDBOX`, or with fromSnapshot `rung snapshot
// fork SNAPSHOT`. It prints one sandbox id per line; a fork that failed is
// reported on stderr and makes the exit status 1.
func newForkCmd(g *globals, fromSnapshot bool) *cobra.Command {
	var req client.ForkRequest
	var labels []string
	use, short := "fork SANDBOX [--count N] [--name N]...", "Fork a live sandbox into independent sandboxes and print their ids"
	if fromSnapshot {
		use, short = "fork SNAPSHOT [--count N] [--name N]...", "Make independent sandboxes from a snapshot and print their ids"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if req.Labels, err = parseKV(labels, "label"); err != nil {
				return err
			}
			fork := c.Fork
			if fromSnapshot {
				fork = c.ForkSnapshot
			}
			forks, err := fork(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			failed := 0
			for i, f := range forks {
				if f.Err != nil {
					failed++
					fmt.Fprintf(os.Stderr, "rung: fork %d: %v\n", i, f.Err)
					continue
				}
				fmt.Println(f.Sandbox.ID)
			}
			if failed > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&req.Count, "count", 0, "how many forks, 1 to 100 (default the number of --name, else 1)")
	cmd.Flags().StringArrayVar(&req.Names, "name", nil, "the forks' names, in order (repeatable)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label key=value for every fork (repeatable; default the source's)")
	return cmd
}
