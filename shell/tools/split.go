package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// split: GNU split 9.1 (-l -b -C -n N|l/N|r/N|K/N, -a, -d -x with FROM,
// --additional-suffix, -e, -t, --verbose; auto-widening suffixes).
// --filter is refused.

var splitOpts = NewOptions("a,suffix-length=", "additional-suffix=", "b,bytes=", "C,line-bytes=", "d",
	"numeric-suffixes=?", "x", "hex-suffixes=?", "e,elide-empty-files", "filter=", "l,lines=", "n,number=",
	"t,separator=", "u,unbuffered", "verbose")

type splitter struct {
	c        *shell.Call
	prefix   string
	extra    string
	alphabet string
	digits   []int // current suffix, as indices into alphabet
	fixed    string
	auto     bool
	started  bool
	verbose  bool
	out      io.WriteCloser
	outName  string
	status   int
}

func (s *splitter) nextName() (string, error) {
	if !s.started {
		s.started = true
	} else {
		i := len(s.digits) - 1
		for ; i >= 0; i-- {
			s.digits[i]++
			if s.auto && i == 0 && s.digits[0] == len(s.alphabet)-1 {
				s.fixed += s.alphabet[len(s.alphabet)-1:]
				s.digits = make([]int, len(s.digits)+1)
				break
			}
			if s.digits[i] < len(s.alphabet) {
				break
			}
			s.digits[i] = 0
		}
		if i < 0 {
			return "", fmt.Errorf("output file suffixes exhausted")
		}
	}
	var b strings.Builder
	b.WriteString(s.prefix)
	b.WriteString(s.fixed)
	for _, d := range s.digits {
		b.WriteByte(s.alphabet[d])
	}
	b.WriteString(s.extra)
	return b.String(), nil
}

// open starts the next output file.
func (s *splitter) open() error {
	if err := s.close(); err != nil {
		return err
	}
	name, err := s.nextName()
	if err != nil {
		return err
	}
	if s.verbose {
		fmt.Fprintf(s.c.Stdout, "creating file %s\n", txQuote(name))
	}
	f, err := s.c.Create(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return fmt.Errorf("%s: %s", txQuote(name), txErr(err))
	}
	s.out, s.outName = f, name
	return nil
}

func (s *splitter) close() error {
	if s.out == nil {
		return nil
	}
	err := s.out.Close()
	s.out = nil
	if err != nil {
		return fmt.Errorf("%s: %s", txQuote(s.outName), txErr(err))
	}
	return nil
}

func (s *splitter) write(p []byte) error {
	if _, err := s.out.Write(p); err != nil {
		return fmt.Errorf("%s: %s", txQuote(s.outName), txErr(err))
	}
	return nil
}

func runSplit(ctx context.Context, c *shell.Call) int {
	opts, ops, st, ok := txParse(c, splitOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, "filter"); bad {
		return txFail(c, o)
	}
	s := &splitter{c: c, prefix: "x", alphabet: "abcdefghijklmnopqrstuvwxyz", auto: true}
	mode, size := "l", uint64(1000)
	var chunkSpec string
	suffixLen, from := 2, uint64(0)
	elide, sep := false, byte('\n')
	for _, o := range opts {
		switch o.Key {
		case "suffix-length":
			n, err := strconv.ParseUint(o.Value, 10, 16)
			if err != nil {
				c.Errorf("%s: invalid suffix length", txQuote(o.Value))
				return 1
			}
			suffixLen, s.auto = int(n), false
		case "additional-suffix":
			if strings.Contains(o.Value, "/") {
				c.Errorf("invalid suffix %s, contains directory separator", txQuote(o.Value))
				return txUsageMsg(c, "")
			}
			s.extra = o.Value
		case "bytes", "line-bytes", "lines":
			n, ok := txParseSize(o.Value)
			if !ok || n == 0 {
				what := map[string]string{"bytes": "number of bytes", "line-bytes": "number of bytes", "lines": "number of lines"}[o.Key]
				c.Errorf("invalid %s: %s", what, txQuote(o.Value))
				return 1
			}
			mode, size = map[string]string{"bytes": "b", "line-bytes": "C", "lines": "l"}[o.Key], n
		case "number":
			mode, chunkSpec = "n", o.Value
		case "d", "numeric-suffixes", "x", "hex-suffixes":
			s.alphabet = "0123456789"
			if o.Key == "x" || o.Key == "hex-suffixes" {
				s.alphabet = "0123456789abcdef"
			}
			if o.HasArg {
				n, err := strconv.ParseUint(o.Value, 10, 63)
				if err != nil {
					c.Errorf("%s: invalid start value for numerical suffix", txQuote(o.Value))
					return 1
				}
				from = n
				s.auto = false
			}
		case "elide-empty-files":
			elide = true
		case "separator":
			if len(o.Value) != 1 && o.Value != `\0` {
				c.Errorf("multi-character separator %s", txQuote(o.Value))
				return 1
			}
			sep = o.Value[0]
			if o.Value == `\0` {
				sep = 0
			}
		case "verbose":
			s.verbose = true
		}
	}
	if len(ops) > 2 {
		return txUsageMsg(c, "extra operand "+txQuote(ops[2]))
	}
	in := "-"
	if len(ops) > 0 {
		in = ops[0]
	}
	if len(ops) > 1 {
		s.prefix = ops[1]
	}
	// Fit the suffix to N chunks and to FROM.
	var n, k uint64
	kind := ""
	if mode == "n" {
		var err string
		kind, k, n, err = parseSplitChunks(chunkSpec)
		if err != "" {
			c.Errorf("%s", err)
			return 1
		}
		if s.auto || true {
			need := 1
			for v := uint64(len(s.alphabet)); v < n+from; v *= uint64(len(s.alphabet)) {
				need++
			}
			if s.auto {
				suffixLen = max(suffixLen, need)
			} else if need > suffixLen {
				c.Errorf("the suffix length needs to be at least %d", need)
				return 1
			}
		}
		s.auto = false
	}
	s.digits = make([]int, suffixLen)
	for v, i := from, suffixLen-1; v > 0 && i >= 0; i-- {
		s.digits[i] = int(v % uint64(len(s.alphabet)))
		v /= uint64(len(s.alphabet))
	}
	if from > 0 {
		s.auto = false
	}
	r, err := txOpen(ctx, c, in)
	if err != nil {
		c.Errorf("cannot open %s for reading: %s", txQuote(in), txErr(err))
		return 1
	}
	defer r.Close()
	switch mode {
	case "l":
		err = s.byLines(r, size, sep)
	case "b":
		err = s.byBytes(r, size)
	case "C":
		err = s.byLineBytes(r, size, sep)
	case "n":
		err = s.chunks(c, in, r, kind, k, n, elide, sep)
	}
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		if txIsCtx(err) {
			return txCtxStatus
		}
		c.Errorf("%s", err)
		return 1
	}
	return 0
}

func parseSplitChunks(v string) (string, uint64, uint64, string) {
	kind := ""
	if strings.HasPrefix(v, "l/") || strings.HasPrefix(v, "r/") {
		kind, v = v[:1], v[2:]
	}
	var k uint64
	if a, b, ok := strings.Cut(v, "/"); ok {
		kk, err := strconv.ParseUint(a, 10, 63)
		if err != nil || kk == 0 {
			return "", 0, 0, "invalid chunk number: " + txQuote(a)
		}
		k, v = kk, b
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil || n == 0 {
		return "", 0, 0, "invalid number of chunks: " + txQuote(v)
	}
	if k > n {
		return "", 0, 0, "invalid chunk number: " + txQuote(strconv.FormatUint(k, 10))
	}
	return kind, k, n, ""
}

func (s *splitter) byLines(r io.Reader, n uint64, sep byte) error {
	lr := newTxLineReader(s.c, r, sep)
	count := uint64(0)
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if count%n == 0 {
			if err := s.open(); err != nil {
				return err
			}
		}
		count++
		if err := s.write(line); err != nil {
			return err
		}
	}
}

func (s *splitter) byBytes(r io.Reader, n uint64) error {
	buf := make([]byte, 64<<10)
	left := uint64(0)
	for {
		k, err := r.Read(buf)
		chunk := buf[:k]
		for len(chunk) > 0 {
			if left == 0 {
				if err := s.open(); err != nil {
					return err
				}
				left = n
			}
			m := min(uint64(len(chunk)), left)
			if err := s.write(chunk[:m]); err != nil {
				return err
			}
			chunk, left = chunk[m:], left-m
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// byLineBytes (-C) puts as many whole lines as fit in n bytes in each
// file; a longer line is split across files.
func (s *splitter) byLineBytes(r io.Reader, n uint64, sep byte) error {
	data, err := s.c.ReadAll(r)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		end := uint64(len(data))
		if end > n {
			end = n
			if i := bytes.LastIndexByte(data[:n], sep); i >= 0 {
				end = uint64(i) + 1
			}
		}
		if err := s.open(); err != nil {
			return err
		}
		if err := s.write(data[:end]); err != nil {
			return err
		}
		data = data[end:]
	}
	return nil
}

func (s *splitter) chunks(c *shell.Call, name string, r io.Reader, kind string, k, n uint64, elide bool, sep byte) error {
	if kind != "r" {
		if _, _, ok := tailSeekable(r); !ok && !splitIsFile(c, name) {
			return fmt.Errorf("%s: cannot determine file size", name)
		}
	}
	data, err := c.ReadAll(r)
	if err != nil {
		return err
	}
	size := uint64(len(data))
	var parts [][]byte
	switch kind {
	case "r":
		parts = make([][]byte, n)
		for i, line := range txSplitKeep(data, sep) {
			parts[uint64(i)%n] = append(parts[uint64(i)%n], line...)
		}
	case "l":
		pos := uint64(0)
		for i := uint64(1); i <= n; i++ {
			target := i * (size / n)
			if i == n {
				target = size
			}
			end := pos
			if target > pos {
				j := bytes.IndexByte(data[target-1:], sep)
				if j < 0 || i == n {
					end = size
				} else {
					end = target + uint64(j)
				}
			}
			parts = append(parts, data[pos:end])
			pos = end
		}
	default:
		cs := max(size/n, 1)
		for i := uint64(1); i <= n; i++ {
			start, end := min((i-1)*cs, size), min(i*cs, size)
			if i == n {
				end = size
			}
			parts = append(parts, data[start:end])
		}
	}
	if k > 0 {
		_, err := c.Stdout.Write(parts[k-1])
		return err
	}
	for _, p := range parts {
		if elide && len(p) == 0 {
			continue
		}
		if err := s.open(); err != nil {
			return err
		}
		if err := s.write(p); err != nil {
			return err
		}
	}
	return nil
}

func splitIsFile(c *shell.Call, name string) bool {
	if name == "-" {
		return false
	}
	fi, err := c.FS.Stat(c.Abs(name))
	return err == nil && fi.Mode().IsRegular()
}

// txSplitKeep splits data into records that keep their separator.
func txSplitKeep(data []byte, sep byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, sep)
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}
