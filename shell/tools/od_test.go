package tools

import "testing"

func TestOd(t *testing.T) {
	t.Parallel()
	zeros := txRepeat("\x00", 40) + "x"
	f := map[string]string{"o1": "hello world\n\x00\x01\xff", "zeros": zeros, "empty": "", "floats": "\x00\x00\x80\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f\xdb\x0f\x49\x40",
		"all": func() string {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return string(b)
		}()}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("default", "od", "o1"),
		c("c", "od", "-c", "o1"),
		c("An-tx1", "od", "-An", "-tx1", "o1"),
		c("Ax-tx2", "od", "-Ax", "-tx2", "o1"),
		c("Ad", "od", "-Ad", "-c", "o1"),
		c("td4", "od", "-td4", "o1"),
		c("tu1-N", "od", "-tu1", "-N4", "o1"),
		c("j-N", "od", "-j2", "-N3", "-c", "o1"),
		c("dup", "od", "-c", "zeros"),
		c("dup-v", "od", "-v", "-c", "zeros"),
		c("ta", "od", "-ta", "all"),
		c("tc-all", "od", "-tc", "all"),
		c("w4", "od", "-w4", "-tx1", "o1"),
		c("w-default", "od", "-w", "-tx1", "all"),
		c("multi", "od", "-tx1", "-tc", "o1"),
		c("multi-d2-o1", "od", "-t", "d2", "-t", "o1", "o1"),
		c("x", "od", "-x", "o1"),
		c("b", "od", "-b", "o1"),
		c("d", "od", "-d", "o1"),
		c("s", "od", "-s", "o1"),
		c("i", "od", "-i", "o1"),
		c("l", "od", "-l", "all"),
		c("o", "od", "-o", "o1"),
		c("tx8", "od", "-tx8", "all"),
		c("to4", "od", "-to4", "o1"),
		c("td1", "od", "-td1", "all"),
		c("tdC", "od", "-tdC", "o1"),
		c("tf4", "od", "-tf4", "floats"),
		c("tf8", "od", "-tf8", "floats"),
		c("tf-mixed", "od", "-tf4", "-tf8", "floats"),
		c("empty", "od", "empty"),
		c("stdin", "od", "-c"),
		c("missing", "od", "nope"),
		c("multi-file", "od", "-c", "o1", "o1"),
		c("skip-past", "od", "-j", "100", "o1"),
		c("bad-radix", "od", "-Aq", "o1"),
		c("bad-type", "od", "-tq", "o1"),
		c("N-hex", "od", "-N", "0x4", "-c", "o1"),
		c("tx1z", "od", "-t", "x1z", "o1"),
		c("tx1z-all", "od", "-tx1z", "all"),
		c("tx1z-An", "od", "-An", "-tx1z", "all"),
		c("tx2z-w8", "od", "-Ad", "-tx2z", "-w8", "all"),
		c("tx4z-odd", "od", "-tx4z", "o1"),
		c("tx8z", "od", "-tx8z", "o1"),
		c("td4z-tc", "od", "-td4z", "-tc", "o1"),
		c("tcz", "od", "-tcz", "o1"),
		c("taz", "od", "-taz", "all"),
		c("to2z-tx1z", "od", "-to2z", "-tx1z", "o1"),
		c("tx1z-tx2", "od", "-tx1z", "-tx2", "o1"),
		c("tx1-tx2z", "od", "-tx1", "-tx2z", "o1"),
		c("tf4z", "od", "-tf4z", "floats"),
		c("tz-dup", "od", "-tx1z", "zeros"),
		c("tz-empty", "od", "-tx1z", "empty"),
		c("tx1z-N5-w3", "od", "-tx1z", "-N5", "-w3", "o1"),
		c("z-alone", "od", "-tz", "o1"),
		c("z-twice", "od", "-tx1zz", "o1"),
		c("tx1zx2", "od", "-tx1zx2", "o1"),
	})
}
