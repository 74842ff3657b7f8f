package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func parseKV(list []string, what string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, rung.Errorf(rung.ErrInvalid, "%s %q: want key=value", what, kv)
		}
		m[k] = v
	}
	return m, nil
}

func newCreate(g *globals) *cobra.Command {
	var req client.CreateRequest
	var size string
	var labels, env []string
	var asJSON bool
	var net netFlags
	cmd := &cobra.Command{
		Use:   "create [--name N] [--image I] [--user U] [--size S] [--label k=v]... [--network MODE [--allow D]... [--deny D]...]",
		Short: "Create a sandbox and print its id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if req.Labels, err = parseKV(labels, "label"); err != nil {
				return err
			}
			if size != "" {
				req.Size = rung.Size{Preset: size}
			}
			if req.Env, err = parseKV(env, "env"); err != nil {
				return err
			}
			if req.Network, err = net.policy(); err != nil {
				return err
			}
			sb, err := c.Create(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(sb)
			}
			fmt.Println(sb.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Name, "name", "", "name, unique in your tenant")
	cmd.Flags().StringVar(&req.Image, "image", "", "image for the container tier (default the server's: base)")
	cmd.Flags().StringVar(&req.User, "user", "", "user commands run as, e.g. root (default the image's: user in base)")
	cmd.Flags().StringVar(&size, "size", "", "size preset: lite, basic, standard-1 .. standard-4 (default "+rung.DefaultPreset+")")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label key=value (repeatable)")
	cmd.Flags().Int64Var(&req.TTLMS, "ttl-ms", 0, "delete the sandbox this many milliseconds after creation")
	cmd.Flags().StringVar(&req.FromSnapshot, "from", "", "restore this snapshot (id or name): its files, on its image digest")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sandbox as JSON")
	cmd.Flags().StringArrayVar(&env, "env", nil, "environment variable KEY=VALUE for every command (repeatable; {{secret:NAME}} becomes the secret's placeholder)")
	net.add(cmd)
	return cmd
}

func newLs(g *globals) *cobra.Command {
	var labels []string
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [--label k=v] [--state S]",
		Short: "List your sandboxes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			l, err := parseKV(labels, "label")
			if err != nil {
				return err
			}
			list, err := c.List(cmd.Context(), client.ListOptions{Labels: l, State: rung.State(state)})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(list)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSTATE\tSIZE\tCREATED")
			for _, sb := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sb.ID, sb.Name, sb.State, sb.Size.String(), sb.CreatedAt.Format("2006-01-02 15:04:05"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringArrayVar(&labels, "label", nil, "only sandboxes with this label key=value (repeatable)")
	cmd.Flags().StringVar(&state, "state", "", "only sandboxes in this state")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm SANDBOX...",
		Short: "Delete sandboxes and their workspaces",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			for _, id := range args {
				if err := c.Delete(cmd.Context(), id); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
