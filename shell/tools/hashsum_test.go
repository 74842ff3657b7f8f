package tools

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBase64(t *testing.T) {
	t.Parallel()
	b := func(name, stdin string, args ...string) toolCase {
		return toolCase{name: name, stdin: stdin, args: append([]string{"base64"}, args...)}
	}
	long := txRepeat("The quick brown fox jumps over the lazy dog. ", 10)
	runDiff(t, []toolCase{
		b("encode", "hello\n"),
		b("encode-empty", ""),
		b("encode-long", long),
		b("encode-w0", long, "-w0"),
		b("encode-w4", "abcdefgh", "-w", "4"),
		b("encode-w5", "abcdefgh", "--wrap=5"),
		b("encode-bin", "\x00\xff\xfe\x80"),
		b("decode", "aGVsbG8K\n", "-d"),
		b("decode-wrapped", "YWJj\nZGVm\n", "-d"),
		b("decode-concat-pad", "YQ==YQ==\n", "-d"),
		b("decode-nopad", "YQ\n", "-d"),
		b("decode-short-pad", "YQ=\n", "-d"),
		b("decode-space", "Y Q==\n", "-d"),
		b("decode-bad", "YWJ*\n", "-d"),
		b("decode-partial", "YWJjZA\n", "-d"),
		b("decode-garbage", "a!b=\n", "-di"),
		b("decode-garbage-ok", "YW*Jj\n", "-d", "-i"),
		b("roundtrip-long", "VGhlIHF1aWNrIGJyb3duIGZveA==\n", "--decode"),
		b("missing", "", "nope"),
		b("extra", "", "a", "b"),
		b("bad-wrap", "", "-w", "x"),
		{name: "file", args: []string{"base64", "f"}, files: map[string]string{"f": long}},
	})
}

func TestHashsum(t *testing.T) {
	t.Parallel()
	files := map[string]string{"plain": "abc\n", "empty": "", "bin": "\x00\x01\xff"}
	setup := func(t *testing.T, dir string) {
		for name, data := range map[string]string{"a\\b": "x", "n\nl": "y", "c\rr": "z"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w := func(name, data string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w("good.md5", "0bee89b07a248e27c83fc3d5951213c1  plain\nd41d8cd98f00b204e9800998ecf8427e *empty\n")
		w("mixed.md5", "0bee89b07a248e27c83fc3d5951213c1  plain\n00000000000000000000000000000000  empty\ngarbage\n"+
			"0bee89b07a248e27c83fc3d5951213c1  nofile\n")
		w("tag.sha256", "SHA256 (plain) = edeaaff3f1774ad2888673770c6d64097e391bc362d7d6fb34982ddf0efd18cb\n")
		w("esc.md5", "\\9dd4e461268c8034f5c8564e155c67a6  a\\\\b\n")
		w("none.md5", "nothing here\n")
	}
	h := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: args, files: files, setup: setup}
	}
	runDiff(t, []toolCase{
		h("md5", "md5sum", "plain", "empty"),
		h("sha1", "sha1sum", "plain"),
		h("sha224", "sha224sum", "plain"),
		h("sha256", "sha256sum", "plain", "bin"),
		h("sha384", "sha384sum", "plain"),
		h("sha512", "sha512sum", "plain"),
		h("binary", "md5sum", "-b", "plain"),
		h("text", "md5sum", "-t", "plain"),
		h("tag", "sha256sum", "--tag", "plain"),
		h("zero", "md5sum", "-z", "plain"),
		h("escaped", "md5sum", "a\\b", "n\nl", "c\rr"),
		h("escaped-tag", "md5sum", "--tag", "a\\b"),
		h("escaped-zero", "md5sum", "-z", "n\nl"),
		h("stdin", "md5sum"),
		h("missing", "md5sum", "nope", "plain"),
		h("dir", "md5sum", "."),
		h("check-good", "md5sum", "-c", "good.md5"),
		h("check-mixed", "md5sum", "-c", "mixed.md5"),
		h("check-quiet", "md5sum", "--quiet", "-c", "mixed.md5"),
		h("check-status", "md5sum", "--status", "-c", "mixed.md5"),
		h("check-strict", "md5sum", "--strict", "-c", "good.md5"),
		h("check-warn", "md5sum", "-w", "-c", "mixed.md5"),
		h("check-ignore-missing", "md5sum", "--ignore-missing", "-c", "mixed.md5"),
		h("check-tag", "sha256sum", "-c", "tag.sha256"),
		h("check-escaped", "md5sum", "-c", "esc.md5"),
		h("check-none", "md5sum", "-c", "none.md5"),
		h("check-wrong-algo", "sha1sum", "-c", "good.md5"),
		h("check-missing-list", "md5sum", "-c", "nolist"),
	})
}
