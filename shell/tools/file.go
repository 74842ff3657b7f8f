package tools

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// file classifies files like file(1) 5.44 on Debian 12, for the types it
// can name exactly: empty, directories, symlinks, FIFOs, sockets, plain
// ASCII and UTF-8 text (with its line-terminator notes), shell, bash and
// Python scripts, JSON, gzip, and "data". A file that libmagic would name
// from a rule we do not carry (ELF, images, archives, source code, markup,
// other encodings) makes file refuse as unsupported rather than guess.

var fileSpec = fuNewSpec([]string{"b,brief", "L,dereference", "h,no-dereference", "N,no-pad", "mime-type", "i,mime"},
	"z,uncompress", "Z,uncompress-noreport", "s,special-files", "k,keep-going", "r,raw", "0,print0",
	"F,separator=", "f,files-from=", "m,magic-file=", "e,exclude=", "exclude-quiet=", "E", "p,preserve-date",
	"P,parameter=", "l,list", "C,compile", "d,debug", "apple", "extension", "mime-encoding", "help", "version")

// errFileUnknown means the content needs a libmagic rule we lack.
var errFileUnknown = errors.New("unknown type")

func runFile(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := fileSpec.parse(c, 1)
	if !ok {
		return status
	}
	var brief, deref, noPad bool
	mime := 0 // 1 --mime-type, 2 --mime
	for _, o := range opts {
		switch o.Key {
		case "brief":
			brief = true
		case "dereference":
			deref = true
		case "no-dereference":
			deref = false
		case "no-pad":
			noPad = true
		case "mime-type":
			mime = 1
		case "mime":
			mime = 2
		}
	}
	if len(args) == 0 {
		c.Errorf("Usage: file [-bcdEhikLlNnprsSvzZ0] [--apparent-size] [--exclude test] [--extension] [--mime-encoding] [--mime-type] [-e <testname>] [-F <separator>]  [-f <namefile>] [-m <magicfiles>] [-P <parameter=value>] [--exclude-quiet test] <file> ...")
		return 1
	}
	width := 0
	for _, a := range args {
		width = max(width, utf8.RuneCountInString(a)+1)
	}
	var out strings.Builder
	for _, a := range args {
		if ctx.Err() != nil {
			return 130
		}
		desc, mt, err := fileClassify(c, a, deref)
		if errors.Is(err, errFileUnknown) {
			return c.Fail("classifying " + fuQuote(a) + " (needs libmagic)")
		}
		if err != nil {
			desc = fmt.Sprintf("cannot open `%s' (%s)", a, fuErr(err))
			mt = ""
		}
		if mime > 0 && err == nil {
			if mt == "" {
				return c.Fail("--mime for " + fuQuote(a))
			}
			desc = mt
			if mime == 1 {
				desc, _, _ = strings.Cut(mt, ";")
			}
		}
		if !brief {
			pad := width
			if noPad {
				pad = 0
			}
			fmt.Fprintf(&out, "%-*s ", pad, a+":")
		}
		out.WriteString(desc)
		out.WriteByte('\n')
	}
	io.WriteString(c.Stdout, out.String())
	return 0
}

// fileClassify returns the description and MIME string of one file.
func fileClassify(c *shell.Call, name string, deref bool) (string, string, error) {
	st, err := fuLstat(c, name)
	if err != nil {
		return "", "", err
	}
	if st.isLink() {
		t, _ := c.FS.Readlink(c.Abs(name))
		tst, terr := fuStatPath(c, name)
		if !deref {
			if terr != nil {
				return "broken symbolic link to " + t, "inode/symlink; charset=binary", nil
			}
			return "symbolic link to " + t, "inode/symlink; charset=binary", nil
		}
		if terr != nil {
			return "", "", terr
		}
		st = tst
	}
	switch st.Mode & 0o170000 {
	case 0o040000:
		return "directory", "inode/directory; charset=binary", nil
	case 0o010000:
		return "fifo (named pipe)", "inode/fifo; charset=binary", nil
	case 0o140000:
		return "socket", "inode/socket; charset=binary", nil
	case 0o020000, 0o060000:
		return "", "", errFileUnknown
	}
	if st.Size == 0 {
		return "empty", "inode/x-empty; charset=binary", nil
	}
	f, err := c.Open(name)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	// libmagic reads at most 1 MiB (its default bytes limit).
	buf, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return "", "", err
	}
	if st.isDir() {
		return "directory", "inode/directory; charset=binary", nil
	}
	if d, mt, ok, err := fileBinary(buf); ok || err != nil {
		return d, mt, err
	}
	return fileText(buf)
}

// fileBinary names binary formats by magic number.
func fileBinary(b []byte) (string, string, bool, error) {
	if len(b) >= 10 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 8 {
		return fileGzip(b), "application/gzip; charset=binary", true, nil
	}
	magics := [][]byte{
		[]byte("\x7fELF"), []byte("\x89PNG"), []byte("\xff\xd8\xff"), []byte("GIF8"), []byte("PK"),
		[]byte("%PDF"), []byte("BZh"), []byte("\xfd7zXZ"), []byte("7z\xbc\xaf"), []byte("Rar!"),
		[]byte("OggS"), []byte("RIFF"), []byte("\xca\xfe\xba\xbe"), []byte("MZ"), []byte("SQLite format 3"),
		[]byte("\x28\xb5\x2f\xfd"), []byte("!<arch>"), []byte("\x00asm"), []byte("\xfe\xff"), []byte("\xff\xfe"),
		[]byte("\xef\xbb\xbf"), []byte("\x1f\x9d"), []byte("\x1f\x8b"), []byte("\x04\x22\x4d\x18"),
	}
	for _, m := range magics {
		if bytes.HasPrefix(b, m) {
			return "", "", false, errFileUnknown
		}
	}
	if len(b) > 262 && string(b[257:262]) == "ustar" {
		return "", "", false, errFileUnknown
	}
	return "", "", false, nil
}

// fileGzip describes a gzip header as libmagic's gzip rule does.
func fileGzip(b []byte) string {
	var parts []string
	flags := b[3]
	if flags&0x08 != 0 {
		rest := b[10:]
		if flags&0x04 != 0 && len(rest) >= 2 {
			n := int(binary.LittleEndian.Uint16(rest))
			if len(rest) >= 2+n {
				rest = rest[2+n:]
			}
		}
		if i := bytes.IndexByte(rest, 0); i >= 0 {
			parts = append(parts, fmt.Sprintf("was \"%s\"", rest[:i]))
		}
	}
	if mt := binary.LittleEndian.Uint32(b[4:8]); mt != 0 {
		parts = append(parts, "last modified: "+time.Unix(int64(mt), 0).UTC().Format("Mon Jan _2 15:04:05 2006"))
	}
	switch b[8] {
	case 2:
		parts = append(parts, "max compression")
	case 4:
		parts = append(parts, "max speed")
	}
	if b[9] == 3 {
		parts = append(parts, "from Unix")
	}
	if len(b) >= 18 {
		parts = append(parts, fmt.Sprintf("original size modulo 2^32 %d", binary.LittleEndian.Uint32(b[len(b)-4:])))
	}
	return "gzip compressed data, " + strings.Join(parts, ", ")
}

// fileText classifies text; it returns errFileUnknown for content that a
// libmagic text rule might name (source code, markup, mail...).
func fileText(b []byte) (string, string, error) {
	var esc bool
	for _, ch := range b {
		switch {
		case ch == 0x1b:
			esc = true
		case ch < 0x07 || (ch > 0x0d && ch < 0x20 && ch != 0x1b) || ch == 0x7f:
			return "data", "application/octet-stream; charset=binary", nil
		}
	}
	enc, charset := "ASCII text", "us-ascii"
	for _, ch := range b {
		if ch >= 0x80 {
			if !utf8.Valid(b) {
				// ISO-8859 and other 8-bit texts need libmagic's rules.
				return "", "", errFileUnknown
			}
			enc, charset = "Unicode text, UTF-8 text", "utf-8"
			break
		}
	}
	kind, mt := "", "text/plain"
	executable := false
	s := string(b)
	if strings.HasPrefix(s, "#!") {
		line, _, _ := strings.Cut(s, "\n")
		f := strings.Fields(strings.TrimPrefix(line, "#!"))
		interp := ""
		if len(f) > 0 {
			interp = f[0]
			if strings.HasSuffix(interp, "/env") && len(f) > 1 {
				interp = f[1]
			}
		}
		switch fuBase(interp) {
		case "sh":
			kind, mt = "POSIX shell script, ", "text/x-shellscript"
		case "bash":
			kind, mt = "Bourne-Again shell script, ", "text/x-shellscript"
		case "python3", "python":
			kind, mt = "Python script, ", "text/x-script.python"
		default:
			return "", "", errFileUnknown
		}
		executable = true
	} else if t := strings.TrimSpace(s); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return "JSON text data", "application/json; charset=" + charset, nil
	} else if fileLooksSpecial(s) {
		return "", "", errFileUnknown
	}
	desc := kind + enc
	if executable {
		desc += " executable"
	}
	longest, cur := 0, 0
	var crlf, cr, lf bool
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\n':
			lf = true
			longest, cur = max(longest, cur), 0
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				crlf = true
				i++
			} else {
				cr = true
			}
			longest, cur = max(longest, cur), 0
		default:
			cur++
		}
	}
	longest = max(longest, cur)
	if longest > 300 {
		desc += fmt.Sprintf(", with very long lines (%d)", longest)
	}
	switch {
	case crlf && !cr && !lf:
		desc += ", with CRLF line terminators"
	case cr && !crlf && !lf:
		desc += ", with CR line terminators"
	case !cr && !crlf && !lf:
		desc += ", with no line terminators"
	case lf && !cr && !crlf:
	default:
		return "", "", errFileUnknown
	}
	if esc {
		desc += ", with escape sequences"
	}
	return desc, mt + "; charset=" + charset, nil
}

// fileLooksSpecial reports text that libmagic's text rules might name
// (programs, markup, mail, patches, PostScript...).
func fileLooksSpecial(s string) bool {
	commaLines := 0
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, ",") {
			commaLines++ // libmagic names consistent comma rows "CSV text"
		}
		if strings.HasPrefix(line, "all:") || fileMakeVar(line) {
			return true // a makefile script
		}
	}
	if commaLines >= 2 {
		return true
	}
	for _, k := range []string{
		"#include", "#define", "#ifndef", "#pragma", "func ", "package ", "import ", "class ", "public ",
		"private ", "struct ", "typedef", "<?", "<!", "<html", "<HTML", "<head", "<svg", "diff ", "--- ",
		"+++ ", "Index:", "From ", "Return-Path:", "Received:", "Subject:", "%!", "\\begin", "\\document",
		"\\input", "BEGIN:", "@echo", "-----BEGIN", "def ", "module ", "use strict", "require(", "function",
		"#!/", ".TH", ".SH", "var ", "const ", "extern", "/*", "msgid", "[Desktop", "%YAML", "---\n", "<?php",
	} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// fileMakeVar reports a line like "CFLAGS = x" or "SUBDIRS += y", which
// libmagic's make rules look for.
func fileMakeVar(line string) bool {
	i := 0
	for i < len(line) && (line[i] >= 'A' && line[i] <= 'Z' || line[i] == '_') {
		i++
	}
	if i == 0 {
		return false
	}
	rest := strings.TrimLeft(line[i:], " \t")
	return strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ":=") || strings.HasPrefix(rest, "+=") || strings.HasPrefix(rest, "?=")
}
