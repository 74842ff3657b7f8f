package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"rung.dev/rung/client"
)

func printEvent(e client.Event) {
	fmt.Printf("%d\t%s\t%s\t%s\n", e.Seq, e.Time.Format("2006-01-02T15:04:05.000Z07:00"), e.Type, string(e.Data))
}

func newJournal(g *globals) *cobra.Command {
	var after int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "journal SANDBOX",
		Short: "Print a sandbox's journal: execs, file writes, lifecycle, effects",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			for {
				entries, err := c.Journal(cmd.Context(), args[0], after)
				if err != nil {
					return err
				}
				for _, e := range entries {
					if asJSON {
						json.NewEncoder(os.Stdout).Encode(e)
					} else {
						printEvent(e)
					}
					after = e.Seq
				}
				if len(entries) < 1000 {
					return nil
				}
			}
		},
	}
	cmd.Flags().Int64Var(&after, "after", 0, "only entries after this sequence number")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object a line")
	return cmd
}

func newEvents(g *globals) *cobra.Command {
	var o client.EventsOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events SANDBOX [--follow] [--after N]",
		Short: "Print a sandbox's events (journal entries and exec output)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return c.Events(cmd.Context(), args[0], o, func(e client.Event) error {
				if asJSON {
					return json.NewEncoder(os.Stdout).Encode(e)
				}
				printEvent(e)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep streaming new events")
	cmd.Flags().Int64Var(&o.After, "after", 0, "start after this sequence number")
	cmd.Flags().BoolVar(&o.JournalOnly, "journal", false, "journal entries only")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object a line")
	return cmd
}

func newToken(g *globals) *cobra.Command {
	tok := &cobra.Command{Use: "token", Short: "Manage API tokens (admin)"}
	var tenant string
	var admin, e2bKey bool
	create := &cobra.Command{
		Use:   "create --tenant T",
		Short: "Create a token for a tenant and print it (shown once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var t client.Token
			if e2bKey {
				if admin {
					return fmt.Errorf("--e2b makes a tenant's E2B API key; it cannot be --admin")
				}
				t, err = c.CreateE2BKey(cmd.Context(), tenant)
			} else {
				t, err = c.CreateToken(cmd.Context(), tenant, admin)
			}
			if err != nil {
				return err
			}
			fmt.Println(t.Token)
			return nil
		},
	}
	create.Flags().StringVar(&tenant, "tenant", "", "tenant the token acts for")
	create.Flags().BoolVar(&admin, "admin", false, "the token may manage tenants and tokens")
	create.Flags().BoolVar(&e2bKey, "e2b", false, "print it in the E2B SDK's API key form (e2b_ + hex), for E2B_API_KEY")
	create.MarkFlagRequired("tenant")
	tok.AddCommand(create)
	return tok
}

func newTenant(g *globals) *cobra.Command {
	t := &cobra.Command{Use: "tenant", Short: "Manage tenants (admin)"}
	t.AddCommand(&cobra.Command{
		Use:   "create NAME",
		Short: "Create a tenant",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			_, err = c.CreateTenant(cmd.Context(), args[0])
			return err
		},
	}, &cobra.Command{
		Use:   "ls",
		Short: "List tenants",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			list, err := c.ListTenants(cmd.Context())
			if err != nil {
				return err
			}
			for _, t := range list {
				fmt.Println(t.ID)
			}
			return nil
		},
	})
	return t
}
