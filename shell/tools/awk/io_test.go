package awk

import "testing"

var twoFiles = map[string]string{"a.txt": "a1\na2\na3\n", "b.txt": "b1 x\nb2 y\n", "c.csv": "k,v\nx,1\ny,2\n", "prog.awk": "{ n++ }\nEND { print n, FILENAME }\n", "lib.awk": "function twice(x) { return 2*x }\n"}

// f is a case with full arguments and the shared files.
func f(name string, args ...string) awkCase {
	return awkCase{name: name, args: args, files: twoFiles}
}

func TestAwkIO(t *testing.T) {
	runAwkDiff(t, []awkCase{
		f("file operand", "{print}", "a.txt"),
		f("two files FNR", "{print FILENAME, NR, FNR, $0}", "a.txt", "b.txt"),
		f("FNR==NR join", "FNR==NR{a[$1]=1; next} ($1 in a){print \"both\", $1}", "a.txt", "a.txt"),
		f("missing file", "{print}", "nope.txt"),
		f("missing then good", "{print}", "nope.txt", "a.txt"),
		f("stdin dash", "{print FILENAME \":\" $0}", "a.txt", "-"),
		f("operand assignment", "{print x, $0}", "x=1", "a.txt", "x=2", "b.txt"),
		f("operand assignment escapes", "END{print x}", "x=a\\tb", "a.txt"),
		f("operand assignment at end", "END{print x}", "a.txt", "x=9"),
		f("operand assignment only", "END{print NR, x}", "x=1"),
		f("ARGV files", "BEGIN{for (i = 1; i < ARGC; i++) print ARGV[i]}", "a.txt", "x=1", "b.txt"),
		f("ARGV modified", "BEGIN{ARGV[1]=\"b.txt\"} {print}", "a.txt"),
		f("ARGV deleted", "BEGIN{delete ARGV[1]} {print}", "a.txt", "b.txt"),
		f("ARGC extended", "BEGIN{ARGV[ARGC++]=\"b.txt\"} {print}", "a.txt"),
		f("ARGV empty string", "BEGIN{ARGV[1]=\"\"} {print}", "a.txt", "b.txt"),
		f("-F comma", "-F,", "{print $2}", "c.csv"),
		f("-F separate", "-F", ",", "{print $1}", "c.csv"),
		f("-F t", "-Ft", "{print $1}", "a.txt"),
		f("-F tab escape", "-F\\t", "{print NF}", "b.txt"),
		f("-F regex", "-F[0-9]", "{print $1 \"|\" $2}", "a.txt"),
		f("-F single space", "-F ", "{print $1}", "b.txt"),
		f("-v", "-v", "x=5", "BEGIN{print x*2}"),
		f("-v attached", "-vx=hello", "BEGIN{print x}"),
		f("-v escapes", "-v", "x=a\\nb", "BEGIN{print x}"),
		f("-v strnum", "-v", "x=10", "BEGIN{print (x < 9)}"),
		f("-v multiple", "-v", "a=1", "-v", "b=2", "BEGIN{print a+b}"),
		f("-v OFS", "-v", "OFS=:", "{$1=$1; print}", "b.txt"),
		f("-v FS", "-v", "FS=,", "{print $2}", "c.csv"),
		f("-v bad", "-v", "1x=2", "BEGIN{print}"),
		f("-f", "-f", "prog.awk", "a.txt"),
		f("-f two", "-f", "lib.awk", "-f", "prog.awk", "b.txt"),
		f("-f missing", "-f", "none.awk"),
		f("-- program", "--", "{print NR}", "a.txt"),
		f("bad option", "-x", "{print}"),
		{name: "no program", args: []string{"-F,"}, known: "mawk exits 0 silently when there is no program; we print usage and exit 2"},
		f("-F missing arg", "-F"),
		f("output file", "{print > \"out.txt\"}", "a.txt"),
		f("output append", "{print >> \"a.txt\"}", "b.txt"),
		f("output two files", "{print > ($1 \".out\")}", "b.txt"),
		f("output truncates once", "{print NR > \"o.txt\"} END{close(\"o.txt\"); print \"x\" > \"o.txt\"}", "a.txt"),
		f("printf to file", "{printf \"%s;\", $1 > \"p.txt\"}", "a.txt"),
		f("print parens redirect", "{print($1, NR) > \"q.txt\"}", "a.txt"),
		f("redirect concat target", "{print > \"out\" NR \".txt\"}", "b.txt"),
		f("stderr", "BEGIN{print \"err\" > \"/dev/stderr\"; print \"out\"}"),
		f("dev stdout", "BEGIN{print \"x\" > \"/dev/stdout\"; print \"y\"}"),
		f("getline file", "BEGIN{while ((getline line < \"a.txt\") > 0) n++; print n, NR, line}"),
		f("getline file $0", "BEGIN{getline < \"b.txt\"; print $2, NF, NR}"),
		f("getline file var concat", "BEGIN{f=\"a\"; while ((getline l < (f \".txt\")) > 0) print l}"),
		f("getline missing file", "BEGIN{print (getline l < \"zz\")}"),
		f("getline mixes", "NR==1{getline l < \"b.txt\"; print l} {print}", "a.txt"),
		f("getline plain two files", "{while ((getline) > 0) n++} END{print n, NR, FILENAME}", "a.txt", "b.txt"),
		f("close input reread", "BEGIN{getline a < \"a.txt\"; close(\"a.txt\"); getline b < \"a.txt\"; print a, b}"),
		f("nextfile files", "FNR==2{nextfile} {print FILENAME, FNR}", "a.txt", "b.txt"),
		f("FILENAME in BEGIN", "BEGIN{print \"[\" FILENAME \"]\"}", "a.txt"),
		f("FILENAME in END", "END{print FILENAME, NR}", "a.txt", "b.txt"),
		f("ENVIRON HOME", "BEGIN{print ENVIRON[\"HOME\"]}"),
		f("RS regex file", "BEGIN{RS=\"\\n[a-z]\"}{print NR \":\" $0}", "a.txt"),
		f("uninitialized FILENAME var", "{print NR}", "/dev/null"),
		f("directory operand", "{print}", "."),
	})
}

func TestAwkErrors(t *testing.T) {
	runAwkDiff(t, []awkCase{
		p("syntax error", "{print $1", ""),
		p("bad token", "BEGIN{ x = @ }", ""),
		p("unterminated string", "BEGIN{print \"abc}", ""),
		p("unterminated regex", "/abc", ""),
		p("undefined function", "BEGIN{foo(1)}", ""),
		p("break outside loop", "BEGIN{break}", ""),
		p("return outside function", "BEGIN{return 1}", ""),
		p("array as scalar", "BEGIN{a[1]=1; print a}", ""),
		p("scalar as array", "BEGIN{a=1; a[1]=2}", ""),
		p("bad regex", "/a(/", ""),
		p("dynamic bad regex", "BEGIN{r=\"(\"; print (\"x\" ~ r)}", ""),
		p("missing paren", "BEGIN{if (1 print}", ""),
		p("extra brace", "BEGIN{print}}", ""),
		p("printf bad conversion", "BEGIN{printf \"%z\\n\", 1}", ""),
		p("function redefined", "function f(){} function f(){} BEGIN{}", ""),
		p("getline bad lvalue", "BEGIN{getline 1}", ""),
		p("newline in string", "BEGIN{print \"a\nb\"}", ""),
		p("runtime error output kept", "{print; a[1]=1} NR==2{print a}", "x\ny\nz\n"),
	})
}
