package tools

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"rung.dev/rung/shell"
)

// md5sum, sha1sum, sha224sum, sha256sum, sha384sum, sha512sum: GNU 9.1
// (-b -t --tag -z, -c with --quiet --status --strict -w --ignore-missing;
// names holding '\\', newline or CR are escaped with a leading '\\').

var hashOpts = NewOptions("b,binary", "c,check", "tag", "t,text", "z,zero", "ignore-missing", "quiet",
	"status", "strict", "w,warn")

type hashAlgo struct {
	tag string
	new func() hash.Hash
}

var hashAlgos = map[string]hashAlgo{
	"md5sum":    {"MD5", md5.New},
	"sha1sum":   {"SHA1", sha1.New},
	"sha224sum": {"SHA224", sha256.New224},
	"sha256sum": {"SHA256", sha256.New},
	"sha384sum": {"SHA384", sha512.New384},
	"sha512sum": {"SHA512", sha512.New},
}

type hashRun struct {
	c                            *shell.Call
	algo                         hashAlgo
	binary, tag, zero            bool
	ignoreMissing, quiet, status bool
	strict, warn                 bool
	out                          *txOut
}

func runHashsum(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, hashOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	h := &hashRun{c: c, algo: hashAlgos[c.Name()], out: newTxOut(c.Stdout)}
	check := false
	for _, o := range opts {
		switch o.Key {
		case "binary":
			h.binary = true
		case "text":
			h.binary = false
		case "check":
			check = true
		case "tag":
			h.tag = true
		case "zero":
			h.zero = true
		case "ignore-missing":
			h.ignoreMissing = true
		case "quiet":
			h.quiet = true
		case "status":
			h.status = true
		case "strict":
			h.strict = true
		case "warn":
			h.warn = true
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	defer h.out.Flush()
	status := 0
	for _, name := range files {
		var s int
		if check {
			s = h.check(ctx, name)
		} else {
			s = h.print(ctx, name)
		}
		status = max(status, s)
		if ctx.Err() != nil {
			return txCtxStatus
		}
	}
	if h.out.Flush() != nil {
		return 1
	}
	return status
}

func (h *hashRun) sum(ctx context.Context, name string) (string, error) {
	r, err := txOpen(ctx, h.c, name)
	if err != nil {
		return "", err
	}
	defer r.Close()
	d := h.algo.new()
	if _, err := io.Copy(d, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(d.Sum(nil)), nil
}

// hashEscape escapes a name as GNU does; ok reports whether it had to.
func hashEscape(name string) (string, bool) {
	if !strings.ContainsAny(name, "\\\n\r") {
		return name, false
	}
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`)
	return r.Replace(name), true
}

func (h *hashRun) print(ctx context.Context, name string) int {
	sum, err := h.sum(ctx, name)
	if err != nil {
		if txIsCtx(err) {
			return txCtxStatus
		}
		h.out.Flush()
		h.c.Errorf("%s: %s", name, txErr(err))
		return 1
	}
	shown, esc := name, false
	if !h.zero {
		shown, esc = hashEscape(name)
	}
	if esc {
		h.out.WriteByte('\\')
	}
	if h.tag {
		fmt.Fprintf(h.out, "%s (%s) = %s", h.algo.tag, shown, sum)
	} else {
		mode := byte(' ')
		if h.binary {
			mode = '*'
		}
		fmt.Fprintf(h.out, "%s %c%s", sum, mode, shown)
	}
	if h.zero {
		h.out.WriteByte(0)
	} else {
		h.out.WriteByte('\n')
	}
	return 0
}

// parseLine splits a checksum line into hash and file name.
func (h *hashRun) parseLine(line string) (string, string, bool) {
	escaped := false
	if strings.HasPrefix(line, "\\") {
		escaped, line = true, line[1:]
	}
	size := h.algo.new().Size() * 2
	var sum, name string
	if rest, ok := strings.CutPrefix(line, h.algo.tag+" ("); ok {
		i := strings.LastIndex(rest, ") = ")
		if i < 0 {
			return "", "", false
		}
		name, sum = rest[:i], rest[i+4:]
	} else {
		if len(line) < size+2 {
			return "", "", false
		}
		sum = line[:size]
		if line[size] != ' ' || line[size+1] != ' ' && line[size+1] != '*' {
			return "", "", false
		}
		name = line[size+2:]
	}
	if len(sum) != size || strings.Trim(strings.ToLower(sum), "0123456789abcdef") != "" || name == "" {
		return "", "", false
	}
	if escaped {
		var b strings.Builder
		for i := 0; i < len(name); i++ {
			if name[i] == '\\' && i+1 < len(name) {
				i++
				switch name[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case '\\':
					b.WriteByte('\\')
				default:
					return "", "", false
				}
				continue
			}
			b.WriteByte(name[i])
		}
		name = b.String()
	}
	return strings.ToLower(sum), name, true
}

func (h *hashRun) check(ctx context.Context, list string) int {
	r, err := txOpen(ctx, h.c, list)
	if err != nil {
		h.c.Errorf("%s: %s", list, txErr(err))
		return 1
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	var bad, unreadable, mismatched, good, lineNo int
	for sc.Scan() {
		lineNo++
		line := strings.TrimSuffix(sc.Text(), "\r")
		sum, name, ok := h.parseLine(line)
		if !ok {
			bad++
			if h.warn {
				h.out.Flush()
				h.c.Errorf("%s: %d: improperly formatted %s checksum line", txName(list), lineNo, h.algo.tag)
			}
			continue
		}
		good++
		got, err := h.sum(ctx, name)
		shown, esc := name, false
		if strings.ContainsAny(name, "\n\r") {
			shown, esc = hashEscape(name)
		}
		prefix := ""
		if esc {
			prefix = "\\"
		}
		if err != nil {
			if txIsCtx(err) {
				return txCtxStatus
			}
			if h.ignoreMissing && strings.Contains(txErr(err), "No such file") {
				continue
			}
			unreadable++
			h.out.Flush()
			h.c.Errorf("%s: %s", name, txErr(err))
			if !h.status {
				fmt.Fprintf(h.out, "%s%s: FAILED open or read\n", prefix, shown)
			}
			continue
		}
		if got != sum {
			mismatched++
			if !h.status {
				fmt.Fprintf(h.out, "%s%s: FAILED\n", prefix, shown)
			}
		} else if !h.status && !h.quiet {
			fmt.Fprintf(h.out, "%s%s: OK\n", prefix, shown)
		}
	}
	if err := sc.Err(); err != nil {
		h.out.Flush()
		h.c.Errorf("%s: %s", list, txErr(err))
		return 1
	}
	h.out.Flush()
	if good == 0 {
		h.c.Errorf("%s: no properly formatted checksum lines found", txName(list))
		return 1
	}
	if !h.status {
		plural := func(n int, one, many string) string {
			if n == 1 {
				return one
			}
			return many
		}
		if bad > 0 {
			h.c.Errorf("WARNING: %d %s improperly formatted", bad, plural(bad, "line is", "lines are"))
		}
		if unreadable > 0 {
			h.c.Errorf("WARNING: %d listed %s could not be read", unreadable, plural(unreadable, "file", "files"))
		}
		if mismatched > 0 {
			h.c.Errorf("WARNING: %d computed %s did NOT match", mismatched, plural(mismatched, "checksum", "checksums"))
		}
	}
	if unreadable > 0 || mismatched > 0 || h.strict && bad > 0 {
		return 1
	}
	return 0
}
