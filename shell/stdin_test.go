package shell_test

import (
	"testing"

	"rung.dev/rung/shell/shelltest"
)

var stdinFiles = map[string]string{
	"lines.txt": "l1\nl2\nl3\nl4\n",
	"other.txt": "o1\no2\n",
	"empty.txt": "",
	"two.txt":   "t1\nt2\n",
}

// stdinCases check that commands sharing a descriptor see exactly the
// input the others left, as with bash's file offsets.
var stdinCases = withFiles(stdinFiles, group("stdin",
	`{ read a; read b; echo "$a $b"; } < lines.txt`,
	`{ { read a; }; read b; echo "$a $b"; } < lines.txt`,
	`{ read a; while read x; do echo "X:$x"; done < other.txt; read b; echo "$a $b"; } < lines.txt`,
	`{ eval 'read a'; read b; echo "$a $b"; } < lines.txt`,
	`f() { read x; echo "f:$x"; } < other.txt; { read a; f; read b; echo "$a $b"; } < lines.txt`,
	`f() { read x; echo "f:$x"; }; { read a; f; f; read b; echo "$a $b"; } < lines.txt`,
	`while read a; do read b; echo "[$a][$b]"; done < lines.txt`,
	`{ read a; { read x; } < empty.txt; read b; echo "$a [$x] $b"; } < lines.txt`,
	`{ { read a; } <<< "S1"; read b; echo "$a $b"; } < lines.txt`,
	`{ read a; (read c; echo "sub:$c"); read b; echo "$a $b"; } < lines.txt`,
	`{ read a; x=$(read c; echo "$c"); read b; echo "$a [$x] $b"; } < lines.txt`,
	`n=0; while read l; do n=$((n+1)); done < lines.txt; echo $n`,
	`while read -u 3 a; do read b; echo "$a $b"; done 3< two.txt < lines.txt`,
	`exec 3< lines.txt; read -u 3 a; read b <&3; echo "$a $b"; exec 3<&-; read -u 3 c; echo $?`,
	`fn() { read -u 3 a; read -u 3 b; echo "$a $b"; }; fn 3< two.txt`,
	`for i in 1 2; do read -u 3 v; echo "$i $v"; done 3< two.txt`,
	`true 9> nine.txt; echo x >&9 2>/dev/null; echo "rc=$?"`,
	`exec 5> five.txt; echo hi >&5; exec 5>&-; echo more >&5 2>/dev/null; echo "rc=$?"; read v < five.txt; echo $v`,
	`while true; do echo x; break; done > a.txt < nosuch > b.txt; echo "rc=$?"; [ -e a.txt ] && echo a; [ -e b.txt ] || echo nob`,
	`fn() { echo out; echo err >&2; return 4; } > out.txt 2> err.txt; fn; echo "rc=$?"; read o < out.txt; read e < err.txt; echo "$o $e"`,
	`exec 3>&1; runner=exec; $runner > out.txt; echo after; read v < out.txt; echo "got $v" >&3`,
	`exec 3<&-; echo "exec=$?"; true 3<&-; echo "cmd=$?"`,
	"read -u 3 3<<END\nhi\nEND\necho reply=$REPLY",
	"while read l; do echo \"h:$l\"; done > o.txt <<END < nosuch\nalpha\nEND\necho \"rc=$?\"; [ -s o.txt ] || echo empty",
	`{ read a; } < lines.txt; { read b; } < lines.txt; echo "$a $b"`,
	`read a < lines.txt; read b < lines.txt; echo "$a $b"`,
	`echo start; { read x; echo "in:$x"; } <<< "here"; echo end`,
	`mapfile -t -n 1 a < lines.txt; { mapfile -t -n 2 b; read c; } < lines.txt; echo "${a[*]} ${b[*]} $c"`,
	`while read -r a; do echo "$a"; done < <(printf 'p1\np2\n')`,
	`read x < <(echo procsub); echo $x`,
	`echo hi > >(while read l; do echo "got $l"; done); wait`,
	`while read a && read b <&3; do echo "$a/$b"; done < lines.txt 3< two.txt`,
	`printf 'x\ny\n' | { read a; while read b; do echo "[$b]"; done; echo "$a"; }`,
	`{ echo one; echo two; } | { read a; read b; echo "$b $a"; }`,
	`echo a | (read x; echo "sub $x")`,
	`x=$(while read l; do echo "<$l>"; done < two.txt); echo "$x"`,
	`echo "$(< two.txt)"`,
	`x=$(< nosuch); echo "rc=$? [$x]"`,
	`exec < two.txt; read a; read b; echo "$a $b"`,
))

func TestStdin(t *testing.T) { shelltest.Run(t, stdinCases, nil) }
