package tools

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// wc: GNU wc 9.1 in C.UTF-8 (-c -m -l -w -L, --files0-from of a regular
// file; column widths from the sizes of regular-file operands, as GNU
// computes them).

var wcOpts = NewOptions("c,bytes", "m,chars", "l,lines", "w,words", "L,max-line-length", "files0-from=")

// wcCheck refuses --files0-from=- (GNU sizes the columns from the list
// only when it is a regular file, which a standard input seen here
// cannot tell).
func wcCheck(args []string) error {
	if err := txCheck(wcOpts)(args); err != nil {
		return err
	}
	opts, _, err := wcOpts.Parse(args)
	if err != nil {
		return nil
	}
	for _, o := range opts {
		if o.Key == "files0-from" && (o.Value == "-" || o.Value == shell.Unknown || o.Value == "/dev/stdin") {
			return fmt.Errorf("wc --files0-from=%s: %w", o.Value, shell.ErrUnsupported)
		}
	}
	return nil
}

type wcCounts struct{ lines, words, chars, bytes, maxlen uint64 }

type wcWant struct{ lines, words, chars, bytes, maxlen bool }

func runWc(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, wcOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	var w wcWant
	var from *string
	for _, o := range opts {
		switch o.Key {
		case "files0-from":
			from = &o.Value
		case "bytes":
			w.bytes = true
		case "chars":
			w.chars = true
		case "lines":
			w.lines = true
		case "words":
			w.words = true
		case "max-line-length":
			w.maxlen = true
		}
	}
	if !w.bytes && !w.chars && !w.lines && !w.words && !w.maxlen {
		w.lines, w.words, w.bytes = true, true, true
	}
	var bad map[int]string // --files0-from's zero-length names: index -> message
	if from != nil {
		if len(files) > 0 {
			c.Errorf("extra operand %s", txQuote(files[0]))
			io.WriteString(c.Stderr, "file operands cannot be combined with --files0-from\n")
			fmt.Fprintf(c.Stderr, "Try '%s --help' for more information.\n", c.Name())
			return 1
		}
		var st int
		if files, bad, st = wcFiles0(ctx, c, *from); files == nil {
			return st
		}
	}
	named := len(files) > 0 || from != nil
	if !named {
		files = []string{"-"}
	}
	sized := files
	if bad != nil {
		sized = nil
		for i, f := range files {
			if _, ok := bad[i]; !ok {
				sized = append(sized, f)
			}
		}
	}
	width := wcWidth(c, sized, w)
	out := newTxOut(c.Stdout)
	defer out.Flush()
	var total wcCounts
	status := 0
	for i, name := range files {
		if msg, ok := bad[i]; ok {
			out.Flush()
			c.Errorf("%s", msg)
			status = 1
			continue
		}
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			status = 1
			continue
		}
		cnt, rerr := wcCount(r, w)
		r.Close()
		if rerr != nil {
			if txIsCtx(rerr) {
				return txCtxStatus
			}
			out.Flush()
			c.Errorf("%s: %s", name, txErr(rerr))
			status = 1
		}
		label := ""
		if named {
			label = name
		}
		wcPrint(out, cnt, w, width, label)
		total.lines += cnt.lines
		total.words += cnt.words
		total.chars += cnt.chars
		total.bytes += cnt.bytes
		total.maxlen = max(total.maxlen, cnt.maxlen)
	}
	if len(files) > 1 {
		wcPrint(out, total, w, width, "total")
	}
	if err := out.Flush(); err != nil {
		return 1
	}
	return status
}

// wcFiles0 reads --files0-from's list of NUL-terminated names (the last
// one may lack its NUL). A zero-length name is an error in its turn:
// bad maps its index to the message. files is nil when the run ends
// with status.
func wcFiles0(ctx context.Context, c *shell.Call, from string) (files []string, bad map[int]string, status int) {
	if from == "-" || from == "/dev/stdin" {
		return nil, nil, c.Fail("--files0-from=-")
	}
	if st, err := c.Stat(from); err == nil && st.IsDir() {
		c.Errorf("%s: read error: Is a directory", fuQuotef(from))
		return nil, nil, 1
	} else if err == nil && !st.Mode().IsRegular() {
		return nil, nil, c.Fail("--files0-from of a file that is not regular")
	}
	r, err := txOpen(ctx, c, from)
	if err != nil {
		c.Errorf("cannot open %s for reading: %s", txQuote(from), txErr(err))
		return nil, nil, 1
	}
	data, err := c.ReadAll(r)
	r.Close()
	if err != nil {
		if txIsCtx(err) {
			return nil, nil, txCtxStatus
		}
		c.Errorf("%s: read error: %s", txQuote(from), txErr(err))
		return nil, nil, 1
	}
	files = []string{}
	list := string(data)
	for n := 1; len(list) > 0; n++ {
		name, rest, _ := strings.Cut(list, "\x00")
		list = rest
		if name == "" {
			if bad == nil {
				bad = map[int]string{}
			}
			bad[len(files)] = fmt.Sprintf("%s:%d: invalid zero-length file name", fuQuotef(from), n)
		}
		files = append(files, name)
	}
	return files, bad, 0
}

func wcPrint(out *txOut, cnt wcCounts, w wcWant, width int, label string) {
	sep := false
	put := func(on bool, n uint64) {
		if !on {
			return
		}
		if sep {
			out.WriteByte(' ')
		}
		s := strconv.FormatUint(n, 10)
		for i := len(s); i < width; i++ {
			out.WriteByte(' ')
		}
		out.WriteString(s)
		sep = true
	}
	put(w.lines, cnt.lines)
	put(w.words, cnt.words)
	put(w.chars, cnt.chars)
	put(w.bytes, cnt.bytes)
	put(w.maxlen, cnt.maxlen)
	if label != "" {
		out.WriteByte(' ')
		out.WriteString(label)
	}
	out.WriteByte('\n')
}

// wcWidth is GNU's compute_number_width: the digits of the total size of
// the regular-file operands, at least 7 when one is not a regular file,
// and 1 when there is a single operand and a single count.
func wcWidth(c *shell.Call, files []string, w wcWant) int {
	kinds := 0
	for _, on := range []bool{w.lines, w.words, w.chars, w.bytes, w.maxlen} {
		if on {
			kinds++
		}
	}
	if len(files) == 1 && kinds == 1 {
		return 1
	}
	minWidth := 1
	var total uint64
	for _, name := range files {
		fi, err := wcStat(c, name)
		if err != nil {
			continue
		}
		if fi.Mode().IsRegular() {
			total += uint64(fi.Size())
		} else {
			minWidth = 7
		}
	}
	width := 1
	for ; total >= 10; total /= 10 {
		width++
	}
	return max(width, minWidth)
}

func wcStat(c *shell.Call, name string) (fs.FileInfo, error) {
	type statter interface {
		Stat() (fs.FileInfo, error)
	}
	switch name {
	case "-", "/dev/stdin":
		if s, ok := c.Stdin.(statter); ok {
			return s.Stat()
		}
		// The shell's descriptors tell a redirected file from a pipe.
		if s, ok := c.Stdin.(interface{ StatFile() (fs.FileInfo, error) }); ok {
			if fi, err := s.StatFile(); err == nil {
				return fi, nil
			}
		}
		return wcPipeInfo{}, nil
	case "/dev/null", "/dev/zero":
		return wcPipeInfo{}, nil
	}
	return c.FS.Stat(c.Abs(name))
}

// wcPipeInfo describes a non-regular input (a pipe or device).
type wcPipeInfo struct{ fs.FileInfo }

func (wcPipeInfo) Mode() fs.FileMode { return fs.ModeNamedPipe }

func wcCount(r io.Reader, w wcWant) (wcCounts, error) {
	var cnt wcCounts
	buf := make([]byte, 64<<10)
	simple := !w.words && !w.chars && !w.maxlen
	nc := 0 // bytes of an incomplete UTF-8 sequence kept at buf's start
	inWord := false
	linepos := uint64(0)
	for {
		k, err := r.Read(buf[nc:])
		n := nc + k
		cnt.bytes += uint64(k)
		data := buf[:n]
		nc = 0
		if simple {
			for _, b := range data {
				if b == '\n' {
					cnt.lines++
				}
			}
		} else {
			rest := wcScan(data, err != nil, &cnt, &inWord, &linepos)
			nc = copy(buf, rest)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if !simple {
				cnt.words += b2u(inWord)
				cnt.maxlen = max(cnt.maxlen, linepos)
			}
			return cnt, err
		}
	}
	if !simple {
		cnt.words += b2u(inWord)
		cnt.maxlen = max(cnt.maxlen, linepos)
	}
	return cnt, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// wcScan counts data; it returns an incomplete trailing UTF-8 sequence to
// be carried into the next read (unless final).
func wcScan(data []byte, final bool, cnt *wcCounts, inWord *bool, linepos *uint64) []byte {
	for i := 0; i < len(data); {
		b := data[i]
		if b < utf8.RuneSelf {
			i++
			cnt.chars++
			switch b {
			case '\n':
				cnt.lines++
				fallthrough
			case '\r', '\f':
				*linepos, cnt.maxlen = 0, max(cnt.maxlen, *linepos)
				cnt.words += b2u(*inWord)
				*inWord = false
			case '\t':
				*linepos += 8 - *linepos%8
				cnt.words += b2u(*inWord)
				*inWord = false
			case ' ':
				*linepos++
				cnt.words += b2u(*inWord)
				*inWord = false
			case '\v':
				cnt.words += b2u(*inWord)
				*inWord = false
			default:
				if b > 0x20 && b < 0x7f {
					*linepos++
					*inWord = true
				}
			}
			continue
		}
		if !final && !utf8.FullRune(data[i:]) {
			return data[i:]
		}
		r, size := utf8.DecodeRune(data[i:])
		i += size
		if r == utf8.RuneError && size == 1 {
			continue
		}
		cnt.chars++
		if !txIsPrint(r) {
			continue
		}
		*linepos += uint64(txRuneWidth(r))
		if txIsSpace(r) {
			cnt.words += b2u(*inWord)
			*inWord = false
		} else {
			*inWord = true
		}
	}
	return nil
}

// txIsSpace is glibc's iswspace in C.UTF-8, plus the no-break spaces wc
// 9.1 also treats as word separators.
func txIsSpace(r rune) bool {
	switch {
	case r == 0x1680, r >= 0x2000 && r <= 0x200a, r == 0x205f, r == 0x3000,
		r == 0x00a0, r == 0x202f, r == 0x2060:
		return true
	}
	return r == ' ' || r >= '\t' && r <= '\r'
}

// txIsPrint approximates glibc's iswprint for non-ASCII code points.
func txIsPrint(r rune) bool {
	if r < 0xa0 {
		return r >= 0x20 && r < 0x7f
	}
	if r == 0x2028 || r == 0x2029 {
		return false
	}
	return !unicode.Is(unicode.Co, r) && !unicode.Is(unicode.Cs, r) &&
		(unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zs, r) || unicode.Is(unicode.Mn, r))
}

// txRuneWidth approximates glibc's wcwidth: 0 for combining and format
// characters, 2 for East Asian wide and fullwidth ones.
func txRuneWidth(r rune) int {
	switch {
	case r == 0xad:
		return 1
	case r >= 0x1160 && r <= 0x11ff, r == 0x200b:
		return 0
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), unicode.Is(unicode.Cf, r):
		return 0
	}
	for _, rg := range txWide {
		if r < rg[0] {
			return 1
		}
		if r <= rg[1] {
			return 2
		}
	}
	return 1
}

// txWide lists East Asian Wide and Fullwidth ranges (sorted).
var txWide = [][2]rune{
	{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec}, {0x23f0, 0x23f0},
	{0x23f3, 0x23f3}, {0x25fd, 0x25fe}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267f, 0x267f},
	{0x2693, 0x2693}, {0x26a1, 0x26a1}, {0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5},
	{0x26ce, 0x26ce}, {0x26d4, 0x26d4}, {0x26ea, 0x26ea}, {0x26f2, 0x26f3}, {0x26f5, 0x26f5},
	{0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b}, {0x2728, 0x2728},
	{0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
	{0x27b0, 0x27b0}, {0x27bf, 0x27bf}, {0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55},
	{0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
	{0xa960, 0xa97f}, {0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe10, 0xfe19}, {0xfe30, 0xfe6f},
	{0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x16fe0, 0x16fe4}, {0x17000, 0x18aff}, {0x1b000, 0x1b2ff},
	{0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf}, {0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a}, {0x1f200, 0x1f251},
	{0x1f300, 0x1f320}, {0x1f32d, 0x1f335}, {0x1f337, 0x1f37c}, {0x1f37e, 0x1f393}, {0x1f3a0, 0x1f3ca},
	{0x1f3cf, 0x1f3d3}, {0x1f3e0, 0x1f3f0}, {0x1f3f4, 0x1f3f4}, {0x1f3f8, 0x1f43e}, {0x1f440, 0x1f440},
	{0x1f442, 0x1f4fc}, {0x1f4ff, 0x1f53d}, {0x1f54b, 0x1f54e}, {0x1f550, 0x1f567}, {0x1f57a, 0x1f57a},
	{0x1f595, 0x1f596}, {0x1f5a4, 0x1f5a4}, {0x1f5fb, 0x1f64f}, {0x1f680, 0x1f6c5}, {0x1f6cc, 0x1f6cc},
	{0x1f6d0, 0x1f6d2}, {0x1f6d5, 0x1f6d7}, {0x1f6eb, 0x1f6ec}, {0x1f6f4, 0x1f6fc}, {0x1f7e0, 0x1f7eb},
	{0x1f90c, 0x1f93a}, {0x1f93c, 0x1f945}, {0x1f947, 0x1f9ff}, {0x1fa70, 0x1faff}, {0x20000, 0x2fffd},
	{0x30000, 0x3fffd},
}
