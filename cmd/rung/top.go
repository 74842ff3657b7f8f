package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"rung.dev/rung/client"
)

func newTop(g *globals) *cobra.Command {
	var every time.Duration
	var once bool
	var sortBy string
	var rows int
	cmd := &cobra.Command{
		Use:   "top [--sort cpu|memory|disk] [-n ROWS] [--once]",
		Short: "Show the busiest sandboxes' CPU, memory and disk, refreshing (like docker stats)",
		Long: "Show the sandboxes whose containers run, busiest first: CPU (percent of one core since the server's " +
			"previous sample, and CPU time since the container started), memory now and at its peak, and disk " +
			"bytes. The server samples every 5 seconds (GET /v1/usage); rung top redraws every --every until " +
			"interrupted, or prints once with --once (the default when stdout is not a terminal).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch sortBy {
			case "cpu", "memory", "disk":
			default:
				return fmt.Errorf("--sort %q: want cpu, memory or disk", sortBy)
			}
			if every <= 0 {
				return fmt.Errorf("--every must be more than 0")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			term := !once && isTerminal(os.Stdout)
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				u, err := c.Usage(ctx)
				if err != nil {
					return err
				}
				var buf bytes.Buffer
				if term {
					buf.WriteString("\x1b[H\x1b[2J") // home, clear: one redraw, no flicker between
				}
				writeTop(&buf, u, sortBy, rows, time.Now())
				os.Stdout.Write(buf.Bytes())
				if !term {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
			}
		},
	}
	cmd.Flags().DurationVar(&every, "every", 2*time.Second, "how often to redraw")
	cmd.Flags().BoolVar(&once, "once", false, "print one table and exit")
	cmd.Flags().StringVar(&sortBy, "sort", "cpu", "order by cpu, memory or disk, busiest first")
	cmd.Flags().IntVarP(&rows, "rows", "n", 20, "show at most this many sandboxes (0: all)")
	return cmd
}

// writeTop writes u as a table, sorted by sortBy (cpu, memory, disk),
// at most rows lines (0: all).
func writeTop(w io.Writer, u client.UsageList, sortBy string, rows int, now time.Time) {
	sbs := slices.Clone(u.Sandboxes)
	key := func(s client.SandboxUsage) float64 {
		switch sortBy {
		case "memory":
			return float64(s.Usage.MemoryBytes)
		case "disk":
			return float64(s.Usage.DiskBytes)
		}
		return s.Usage.CPUPercent
	}
	slices.SortStableFunc(sbs, func(a, b client.SandboxUsage) int { return cmp.Compare(key(b), key(a)) })
	fmt.Fprintf(w, "%s  %d sandboxes with a running container, sampled every %s\n\n", now.Format("15:04:05"), len(sbs),
		time.Duration(u.IntervalMS)*time.Millisecond)
	if rows > 0 && len(sbs) > rows {
		sbs = sbs[:rows]
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SANDBOX\tNAME\tCPU %\tCPU TIME\tMEMORY\tPEAK\tDISK\tSAMPLED")
	for _, s := range sbs {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\n", s.Sandbox, cmp.Or(s.Name, "-"), s.Usage.CPUPercent,
			(time.Duration(s.Usage.CPUSeconds*1e3) * time.Millisecond).Round(10*time.Millisecond).String(), iec(s.Usage.MemoryBytes), iec(s.Usage.MemoryPeakBytes),
			iec(s.Usage.DiskBytes), s.Usage.Time.Local().Format("15:04:05"))
	}
	tw.Flush()
}

// iec formats n bytes with a binary unit ("12.3MiB"); "-" when unknown.
func iec(n int64) string {
	if n < 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTP"[exp])
}
