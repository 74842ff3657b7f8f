package tools

import (
	"context"
	"io"
	"io/fs"
	"strconv"
	"unicode"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// wc: GNU wc 9.1 in C.UTF-8 (-c -m -l -w -L; column widths from the sizes
// of regular-file operands, as GNU computes them).

var wcOpts = NewOptions("c,bytes", "m,chars", "l,lines", "w,words", "L,max-line-length", "files0-from=")

func wcCheck(args []string) error { return txCheck(wcOpts, "files0-from")(args) }

type wcCounts struct{ lines, words, chars, bytes, maxlen uint64 }

type wcWant struct{ lines, words, chars, bytes, maxlen bool }

func runWc(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, wcOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, "files0-from"); bad {
		return txFail(c, o)
	}
	var w wcWant
	for _, o := range opts {
		switch o.Key {
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
	named := len(files) > 0
	if !named {
		files = []string{"-"}
	}
	width := wcWidth(c, files, w)
	out := newTxOut(c.Stdout)
	defer out.Flush()
	var total wcCounts
	status := 0
	for _, name := range files {
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
