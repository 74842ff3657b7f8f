package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// newNetworkVerbs are `rung port` and `rung secret ...`.
func newNetworkVerbs(g *globals) []*cobra.Command {
	var share bool
	var ttl time.Duration
	port := &cobra.Command{
		Use:   "port SANDBOX PORT [--share [--ttl D]]",
		Short: "Print the URL of a port inside the sandbox (HTTP and WebSocket); --share makes a signed URL that works without a token",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil || n <= 0 || n > 65535 {
				return fmt.Errorf("port %q: want 1 to 65535", args[1])
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if !share {
				if _, err := c.Get(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Println(c.PortURL(args[0], n))
				return nil
			}
			sh, err := c.SharePort(cmd.Context(), args[0], n, ttl)
			if err != nil {
				return err
			}
			fmt.Println(sh.URL)
			fmt.Fprintf(os.Stderr, "share %s expires %s; revoke with: rung port revoke %s\n", sh.ID, sh.ExpiresAt.Local().Format(time.RFC3339), sh.ID)
			return nil
		},
	}
	port.Flags().BoolVar(&share, "share", false, "make a signed, expiring, revocable URL that needs no token")
	port.Flags().DurationVar(&ttl, "ttl", 0, "how long a shared URL works (default 24h, at most 720h)")
	port.AddCommand(&cobra.Command{
		Use:   "revoke SHARE",
		Short: "Revoke a shared port URL at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return c.RevokeShare(cmd.Context(), args[0])
		},
	}, &cobra.Command{
		Use:   "shares SANDBOX",
		Short: "List the sandbox's shared port URLs (tokens are not shown again)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			shs, err := c.Shares(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPORT\tEXPIRES\tREVOKED")
			for _, sh := range shs {
				rev := "-"
				if sh.RevokedAt != nil {
					rev = sh.RevokedAt.Local().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", sh.ID, sh.Port, sh.ExpiresAt.Local().Format(time.RFC3339), rev)
			}
			return tw.Flush()
		},
	})

	secret := &cobra.Command{Use: "secret", Short: "Store secrets for the egress proxy to put into requests (values never come back)"}
	var hosts []string
	var fromEnv string
	set := &cobra.Command{
		Use:   "set NAME --host HOST... [--from-env VAR]",
		Short: "Create or replace a secret, read from stdin (or the environment variable --from-env), sent to --host only",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var value string
			if fromEnv != "" {
				v, ok := os.LookupEnv(fromEnv)
				if !ok {
					return fmt.Errorf("--from-env: %s is not set", fromEnv)
				}
				value = v
			} else {
				b, err := io.ReadAll(io.LimitReader(os.Stdin, 64<<10+1))
				if err != nil {
					return err
				}
				value = strings.TrimSuffix(string(b), "\n")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			sec, err := c.PutSecret(cmd.Context(), args[0], value, hosts)
			if err != nil {
				return err
			}
			fmt.Printf("%s: placeholder %s (use {{secret:%s}} in a sandbox's env or a header rule)\n", sec.Name, sec.Placeholder, sec.Name)
			return nil
		},
	}
	set.Flags().StringArrayVar(&hosts, "host", nil, "a host the secret may be sent to (name or *.name), repeatable")
	set.Flags().StringVar(&fromEnv, "from-env", "", "read the value from this environment variable instead of stdin")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List secrets (names, hosts, placeholders)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			secs, err := c.ListSecrets(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tHOSTS\tUPDATED")
			for _, s := range secs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, strings.Join(s.Hosts, ","), s.UpdatedAt.Local().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Delete a secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return c.DeleteSecret(cmd.Context(), args[0])
		},
	}
	secret.AddCommand(set, ls, rm)
	return []*cobra.Command{port, secret, newNetCmd(g)}
}

// netFlags are the network policy flags of `rung create` and `rung net`.
type netFlags struct {
	mode        string
	allow, deny []string
	header      []string
}

func (f *netFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.mode, "network", "", "network mode: none (loopback only, the default), egress (through rung's proxy and rules) or open")
	cmd.Flags().StringArrayVar(&f.allow, "allow", nil, "allow a destination: a domain (api.github.com, *.npmjs.org) or a CIDR (1.2.3.0/24), optionally :PORTS (repeatable); implies --network egress")
	cmd.Flags().StringArrayVar(&f.deny, "deny", nil, "deny a destination, as --allow (repeatable; deny wins)")
	cmd.Flags().StringArrayVar(&f.header, "header", nil, "set a header on requests to a domain: DOMAIN:Header=Value, Value may hold {{secret:NAME}} (repeatable)")
}

// policy is the flags' network policy; the zero policy when none is set.
func (f *netFlags) policy() (rung.NetworkPolicy, error) {
	p := rung.NetworkPolicy{Mode: rung.NetworkMode(f.mode)}
	for _, a := range f.allow {
		p.Rules = append(p.Rules, ruleOf(rung.RuleAllow, a))
	}
	for _, d := range f.deny {
		p.Rules = append(p.Rules, ruleOf(rung.RuleDeny, d))
	}
	for _, h := range f.header {
		dom, hv, ok1 := strings.Cut(h, ":")
		name, val, ok2 := strings.Cut(hv, "=")
		if !ok1 || !ok2 || dom == "" || name == "" {
			return p, fmt.Errorf("--header %q: want DOMAIN:Header=Value", h)
		}
		p.Headers = append(p.Headers, rung.HeaderRule{Domain: dom, Header: name, Value: val})
	}
	if p.Mode == "" && (len(p.Rules) > 0 || len(p.Headers) > 0) {
		p.Mode = rung.NetworkEgress
	}
	return p, nil
}

// ruleOf reads DEST[:PORTS], DEST a domain or a CIDR.
func ruleOf(action rung.RuleAction, s string) rung.NetworkRule {
	r := rung.NetworkRule{Action: action}
	dest, ports, _ := strings.Cut(s, ":")
	r.Ports = ports
	if strings.Contains(dest, "/") || net.ParseIP(dest) != nil {
		if net.ParseIP(dest) != nil {
			dest += "/32"
		}
		r.CIDR = dest
	} else {
		r.Domain = dest
	}
	return r
}

// newNetCmd is `rung net SANDBOX`: show, or with flags replace, a
// sandbox's network policy, applied to its running container at once.
func newNetCmd(g *globals) *cobra.Command {
	var f netFlags
	cmd := &cobra.Command{
		Use:   "net SANDBOX [--network MODE] [--allow D]... [--deny D]... [--header DOMAIN:H=V]...",
		Short: "Show a sandbox's network policy, or replace it (applied to its running container at once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if f.mode == "" && len(f.allow)+len(f.deny)+len(f.header) == 0 {
				sb, err := c.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return printJSON(sb.Network)
			}
			p, err := f.policy()
			if err != nil {
				return err
			}
			sb, err := c.Update(cmd.Context(), args[0], client.UpdateRequest{Network: &p})
			if err != nil {
				return err
			}
			return printJSON(sb.Network)
		},
	}
	f.add(cmd)
	return cmd
}
