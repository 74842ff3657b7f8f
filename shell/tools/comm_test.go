package tools

import "testing"

func TestCommJoin(t *testing.T) {
	t.Parallel()
	f := map[string]string{"c1": "a\nb\nd\n", "c2": "b\nc\nd\ne\n", "c3": "b\na\n", "nonl": "a\nz",
		"j1": "1 alice 30\n2 bob 25\n3 carol 35\n5 eve 40\n", "j2": "1 NYC\n2 LA\n4 SF\n5 DC\n5 DC2\n",
		"jc1": "a,x,1\nb,y,2\nc,z,3\n", "jc2": "x,X\ny,Y\nw,W\n", "jdup1": "k 1\nk 2\nm 3\n", "jdup2": "k a\nk b\n",
		"jcase1": "A 1\nb 2\n", "jcase2": "a x\nB y\n", "junsorted": "3 c\n1 a\n2 b\n",
		"jh1": "id name\n1 a\n2 b\n", "jh2": "id val\n1 x\n3 z\n", "jsp1": "  1   a b\n2\tc\n", "jempty": ""}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("comm", "comm", "c1", "c2"),
		c("comm-12", "comm", "-12", "c1", "c2"),
		c("comm-13", "comm", "-1", "-3", "c1", "c2"),
		c("comm-23", "comm", "-23", "c1", "c2"),
		c("comm-3", "comm", "-3", "c1", "c2"),
		c("comm-123", "comm", "-123", "c1", "c2"),
		c("comm-unsorted", "comm", "c3", "c1"),
		c("comm-check-order", "comm", "--check-order", "c3", "c1"),
		c("comm-nocheck", "comm", "--nocheck-order", "c3", "c1"),
		c("comm-delim", "comm", "--output-delimiter=XY", "c1", "c2"),
		c("comm-total", "comm", "--total", "c1", "c2"),
		c("comm-total-3", "comm", "--total", "-3", "c1", "c2"),
		c("comm-nonl", "comm", "nonl", "c1"),
		c("comm-stdin", "comm", "-", "c1"),
		c("comm-missing", "comm", "c1"),
		c("comm-nofile", "comm", "c1", "nope"),
		c("comm-empty", "comm", "jempty", "c1"),
		c("comm-sorted-identical", "comm", "c1", "c1"),
		c("join", "join", "j1", "j2"),
		c("join-a1", "join", "-a1", "j1", "j2"),
		c("join-a2", "join", "-a", "2", "j1", "j2"),
		c("join-a12", "join", "-a1", "-a2", "j1", "j2"),
		c("join-v1", "join", "-v1", "j1", "j2"),
		c("join-v2", "join", "-v2", "j1", "j2"),
		c("join-o", "join", "-o", "1.2,2.2", "j1", "j2"),
		c("join-o0", "join", "-o", "0,2.2,1.3", "j1", "j2"),
		c("join-o-e", "join", "-a1", "-e", "NULL", "-o", "0,1.2,2.2", "j1", "j2"),
		c("join-o-auto", "join", "-a2", "-e", "-", "-o", "auto", "j1", "j2"),
		c("join-t", "join", "-t,", "-1", "2", "-2", "1", "jc1", "jc2"),
		c("join-t-a", "join", "-t", ",", "-1", "2", "-a1", "-a2", "jc1", "jc2"),
		c("join-j", "join", "-j", "1", "j1", "j2"),
		c("join-dups", "join", "jdup1", "jdup2"),
		c("join-i", "join", "-i", "jcase1", "jcase2"),
		c("join-unsorted", "join", "junsorted", "j2"),
		c("join-check-order", "join", "--check-order", "junsorted", "j2"),
		c("join-nocheck", "join", "--nocheck-order", "junsorted", "j2"),
		c("join-header", "join", "--header", "jh1", "jh2"),
		c("join-blanks", "join", "jsp1", "j2"),
		c("join-empty", "join", "jempty", "j2"),
		c("join-missing-op", "join", "j1"),
		c("join-bad-field", "join", "-1", "0", "j1", "j2"),
		c("join-bad-o", "join", "-o", "3.1", "j1", "j2"),
		c("join-stdin", "join", "-", "j2"),
	})
}
