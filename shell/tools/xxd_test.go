package tools

import "testing"

func TestXxdHexdump(t *testing.T) {
	t.Parallel()
	zeros := txRepeat("\x00", 40) + "x"
	f := map[string]string{"x1": "hello world, this is xxd\n\x00\xff", "x2": "abcdefghijklmnopqrstuvwxyz0123456789",
		"9name.bin": "ab", "empty": "", "zeros": zeros, "dump": "00000000: 6162 6364  abcd\n00000010: 6566  ef\n",
		"plain": "68656c\n6c6f\n", "odd": "abc"}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("xxd", "xxd", "x1"),
		c("xxd-p", "xxd", "-p", "x1"),
		c("xxd-ps-c", "xxd", "-ps", "-c", "4", "x2"),
		c("xxd-g1-c8", "xxd", "-g1", "-c8", "x1"),
		c("xxd-g3", "xxd", "-g", "3", "-l", "7", "x1"),
		c("xxd-c4", "xxd", "-c", "4", "-l", "6", "x1"),
		c("xxd-u", "xxd", "-u", "-l", "5", "x1"),
		c("xxd-s", "xxd", "-s", "3", "-l", "4", "x1"),
		c("xxd-s-neg", "xxd", "-s", "-3", "x1"),
		c("xxd-s-hex", "xxd", "-s", "0x10", "x2"),
		c("xxd-i", "xxd", "-i", "x1"),
		c("xxd-i-C", "xxd", "-i", "-C", "x2"),
		c("xxd-i-digit", "xxd", "-i", "9name.bin"),
		c("xxd-i-stdin", "xxd", "-i"),
		c("xxd-b", "xxd", "-b", "-l", "4", "x1"),
		c("xxd-b-full", "xxd", "-b", "x2"),
		c("xxd-o", "xxd", "-o", "16", "-l", "4", "x2"),
		c("xxd-r", "xxd", "-r", "dump"),
		c("xxd-r-p", "xxd", "-r", "-p", "plain"),
		c("xxd-r-out", "xxd", "-r", "-p", "plain", "out.bin"),
		c("xxd-empty", "xxd", "empty"),
		c("xxd-missing", "xxd", "nope"),
		c("xxd-out", "xxd", "x2", "out.txt"),
		c("hexdump-C", "hexdump", "-C", "x1"),
		c("hexdump", "hexdump", "x1"),
		c("hexdump-odd", "hexdump", "odd"),
		c("hexdump-n-s", "hexdump", "-n", "3", "-s", "2", "-C", "x1"),
		c("hexdump-squeeze", "hexdump", "-C", "zeros"),
		c("hexdump-v", "hexdump", "-v", "-C", "zeros"),
		c("hexdump-squeeze-default", "hexdump", "zeros"),
		c("hexdump-empty-C", "hexdump", "-C", "empty"),
		c("hexdump-empty", "hexdump", "empty"),
		c("hexdump-missing", "hexdump", "nope"),
		c("hexdump-multi", "hexdump", "-C", "odd", "x2"),
	})
}
