package tools

import (
	"fmt"
	"os"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// lsParse turns ls's parsed options into a configuration; when ok is
// false the tool returns status (a usage error or an unsupported value).
func lsParse(c *shell.Call, opts []Opt) (*lsConfig, int, bool) {
	cfg := &lsConfig{timeKind: 'm', loc: fuLocation(c), now: time.Now(), width: 80}
	if v, ok := c.LookupEnv("QUOTING_STYLE"); ok && lsQuotingStyles[v] {
		cfg.quoting = v
	}
	if v, ok := c.LookupEnv("COLUMNS"); ok {
		if n, err := parseIntStrict(v); err == nil && n > 0 {
			cfg.width = n
		}
	}
	tabs := ""
	for _, o := range opts {
		switch o.Key {
		case "all":
			cfg.all, cfg.almostAll = true, false
		case "almost-all":
			cfg.almostAll, cfg.all = true, false
		case "l":
			cfg.format = lsLong
		case "human-readable":
			cfg.human = true
		case "k":
			cfg.human = false
		case "recursive":
			cfg.recursive = true
		case "1":
			// GNU: -1 has no effect after -l.
			if cfg.format != lsLong {
				cfg.format = lsOnePerLine
			}
		case "C":
			cfg.format = lsColumns
		case "x":
			cfg.format = lsAcross
		case "directory":
			cfg.dirsSelf = true
		case "t":
			cfg.sort, cfg.sortSet = lsByTime, true
		case "S":
			cfg.sort, cfg.sortSet = lsBySize, true
		case "X":
			cfg.sort, cfg.sortSet = lsByExt, true
		case "v":
			cfg.sort, cfg.sortSet = lsByVersion, true
		case "U":
			cfg.sort, cfg.sortSet = lsByNone, true
		case "reverse":
			cfg.reverse = true
		case "classify":
			switch o.Value {
			case "", "always", "yes", "force":
				cfg.indicator = 'F'
			case "never", "no", "none":
				cfg.indicator = 0
			case "auto", "tty", "if-tty":
				// Standard output is never a terminal here.
			default:
				c.Errorf("invalid argument %s for '--classify'", fuQuote(o.Value))
				return nil, 1, false
			}
		case "p":
			cfg.indicator = 'p'
		case "file-type":
			cfg.indicator = 't'
		case "inode":
			cfg.inode = true
		case "size":
			cfg.size = true
		case "numeric-uid-gid":
			cfg.numeric, cfg.format = true, lsLong
		case "no-group":
			cfg.noGroup = true
		case "o":
			cfg.noGroup, cfg.format = true, lsLong
		case "g":
			cfg.noOwner, cfg.format = true, lsLong
		case "color":
			switch o.Value {
			case "never", "no", "none", "auto", "tty", "if-tty":
			case "", "always", "yes", "force":
				return nil, c.Fail("option --color=always"), false
			default:
				c.Errorf("invalid argument %s for '--color'", fuQuote(o.Value))
				return nil, 1, false
			}
		case "c":
			cfg.timeKind = 'c'
		case "u":
			cfg.timeKind = 'a'
		case "sort":
			m := map[string]lsSort{"none": lsByNone, "size": lsBySize, "time": lsByTime, "version": lsByVersion,
				"extension": lsByExt, "name": lsByName}
			v, ok := m[o.Value]
			if !ok {
				if o.Value == "width" {
					return nil, c.Fail("option --sort=width"), false
				}
				c.Errorf("invalid argument %s for '--sort'", fuQuote(o.Value))
				return nil, 1, false
			}
			cfg.sort, cfg.sortSet = v, true
		case "time":
			switch o.Value {
			case "atime", "access", "use":
				cfg.timeKind = 'a'
			case "ctime", "status":
				cfg.timeKind = 'c'
			case "birth", "creation":
				return nil, c.Fail("option --time=" + o.Value), false
			default:
				c.Errorf("invalid argument %s for '--time'", fuQuote(o.Value))
				return nil, 1, false
			}
		case "time-style":
			cfg.timeStyle = o.Value
		case "full-time":
			cfg.format, cfg.timeStyle = lsLong, "full-iso"
		case "group-directories-first":
			cfg.dirsFirst = true
		case "ignore":
			cfg.ignore = append(cfg.ignore, o.Value)
		case "hide":
			cfg.hide = append(cfg.hide, o.Value)
		case "ignore-backups":
			cfg.ignore = append(cfg.ignore, "*~", ".*~")
		case "width":
			n, err := parseIntStrict(o.Value)
			if err != nil {
				c.Errorf("invalid line width: %s", fuQuote(o.Value))
				return nil, 2, false
			}
			cfg.width = n
		case "tabsize":
			if _, err := parseIntStrict(o.Value); err != nil {
				c.Errorf("invalid tab size: %s", fuQuote(o.Value))
				return nil, 2, false
			}
			tabs = o.Value
		case "hyperlink":
			switch o.Value {
			case "never", "no", "none", "auto", "tty", "if-tty":
			case "", "always", "yes", "force":
				return nil, c.Fail("option --hyperlink=always"), false
			default:
				c.Errorf("invalid argument %s for '--hyperlink'", fuQuote(o.Value))
				return nil, 1, false
			}
		case "m":
			cfg.format = lsCommas
		case "format":
			f, ok := lsFormats[o.Value]
			if !ok {
				c.Errorf("invalid argument %s for '--format'", fuQuote(o.Value))
				return nil, 1, false
			}
			cfg.format = f
		case "indicator-style":
			ind, ok := map[string]byte{"none": 0, "slash": 'p', "file-type": 't', "classify": 'F'}[o.Value]
			if !ok {
				c.Errorf("invalid argument %s for '--indicator-style'", fuQuote(o.Value))
				return nil, 1, false
			}
			cfg.indicator = ind
		case "escape":
			cfg.quoting = "escape"
		case "literal":
			cfg.quoting = "literal"
		case "quote-name":
			cfg.quoting = "c"
		case "quoting-style":
			if lsQuotingUnimpl[o.Value] {
				return nil, c.Fail("option --quoting-style=" + o.Value), false
			}
			if !lsQuotingStyles[o.Value] {
				c.Errorf("invalid argument %s for '--quoting-style'", fuQuote(o.Value))
				return nil, 1, false
			}
			cfg.quoting = o.Value
		case "hide-control-chars":
			cfg.hideCtl = true
		case "show-control-chars":
			cfg.hideCtl = false
		case "context":
			cfg.context = true
		case "dereference":
			cfg.deref = true
		case "dereference-command-line":
			cfg.derefArgs = true
		}
	}
	if tabs != "" && tabs != "8" && (cfg.format == lsColumns || cfg.format == lsAcross) {
		// The column code pads with tabs of 8.
		return nil, c.Fail("option -T " + tabs + " with columns"), false
	}
	if cfg.context && (cfg.format != lsOnePerLine || cfg.inode || cfg.size) {
		return nil, c.Fail("option -Z with this format"), false
	}
	if cfg.format == lsCommas && (cfg.inode || cfg.size) {
		return nil, c.Fail("option -m with -i or -s"), false
	}
	if cfg.quoting == "" {
		cfg.quoting = "literal"
	}
	if len(cfg.hide) > 0 && (cfg.all || cfg.almostAll) {
		cfg.hide = nil
	}
	if cfg.sort == lsByNone && cfg.all {
		// Where "." and ".." fall in directory order is not visible
		// through the file view's ReadDir.
		return nil, c.Fail("options -U with -a"), false
	}
	if cfg.timeKind != 'm' && !cfg.sortSet && cfg.format != lsLong {
		cfg.sort = lsByTime
	}
	if cfg.timeStyle == "" {
		cfg.timeStyle = c.Getenv("TIME_STYLE")
	}
	st := strings.TrimPrefix(cfg.timeStyle, "posix-")
	switch {
	case cfg.format != lsLong:
		// GNU looks at the time style only for long listings.
	case st == "" || st == "locale" || st == "full-iso" || st == "long-iso" || st == "iso":
		cfg.timeStyle = st
	case strings.HasPrefix(st, "+"):
		if _, ok := fuStrftime(strings.SplitN(st[1:], "\n", 2)[0], time.Time{}); !ok {
			return nil, c.Fail("time style " + st), false
		}
		cfg.timeStyle = st
	default:
		c.Errorf("invalid argument %s for 'time style'", fuQuote(cfg.timeStyle))
		return nil, 2, false
	}
	return cfg, 0, true
}

func parseIntStrict(s string) (int, error) {
	n := 0
	if s == "" {
		return 0, os.ErrInvalid
	}
	for _, r := range s {
		if r < '0' || r > '9' || n > 1<<30 {
			return 0, os.ErrInvalid
		}
		n = n*10 + int(r-'0')
	}
	return n, nil
}

// lsCheck is ls's Check: unknown or unimplemented flags, and flag values
// that run time would refuse (--color=always, --sort=width, -U with -a...).
func lsCheck(args []string) error {
	if err := lsSpec.check(args); err != nil {
		return err
	}
	opts, _, _ := lsSpec.opts.Parse(args)
	all, unsorted, context, complex := false, false, false, false
	tabs := ""
	for _, o := range opts {
		bad := false
		switch o.Key {
		case "color":
			bad = o.Value == "" || o.Value == "always" || o.Value == "yes" || o.Value == "force"
		case "sort":
			bad = o.Value == "width"
			unsorted = o.Value == "none"
		case "time":
			bad = o.Value == "birth" || o.Value == "creation"
		case "hyperlink":
			bad = o.Value == "" || o.Value == "always" || o.Value == "yes" || o.Value == "force"
		case "quoting-style":
			bad = lsQuotingUnimpl[o.Value]
		case "tabsize":
			tabs = o.Value
		case "context":
			context = true
		case "C", "x", "m", "l", "1", "format", "inode", "size", "o", "g", "numeric-uid-gid", "full-time":
			// -Z only with names one per line; -T only without columns;
			// -m without -i or -s: the run refuses the rest.
			complex = true
		case "U":
			unsorted = true
		case "t", "S", "X", "v":
			unsorted = false
		case "all":
			all = true
		case "almost-all":
			all = false
		}
		if bad {
			return fmt.Errorf("option %s=%s: %w", o.Name, o.Value, shell.ErrUnsupported)
		}
	}
	if all && unsorted {
		return fmt.Errorf("options -U with -a: %w", shell.ErrUnsupported)
	}
	if complex && (context || tabs != "" && tabs != "8") {
		return fmt.Errorf("options -Z or -T with a format: %w", shell.ErrUnsupported)
	}
	return nil
}
