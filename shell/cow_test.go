package shell_test

import (
	"testing"

	"rung.dev/rung/shell/shelltest"
)

// subshellIsolationCases check that subshells, pipeline stages, command
// and process substitutions and background jobs see their parent's
// variables as they were when they started, and that nothing they change
// reaches the parent or a sibling. The interpreter shares variables with
// a subshell until one side changes them (copy on write).
var subshellIsolationCases = group("subshell-isolation",
	"x=1; echo $x | { read y; x=2; echo $x $y; }; echo $x",
	"x=0; { x=1; echo $x; } | { echo $x; read l; echo $l; }; echo $x",
	catFn+"a=(1 2 3); declare -A m=([k]=v); { a[1]=X; a+=(Y); m[k]=Z; m[n]=W; echo \"${a[*]} ${m[k]} ${m[n]}\"; } | cat; echo \"${a[*]} ${m[k]} [${m[n]}]\"",
	"x=1; declare -n r=x; { r=5; echo $x; } | { read l; echo $l; }; echo $x $r",
	"f() { local v=1; { v=2; g=3; echo $v; } | { read l; echo $l; }; echo $v $g; }; g=0; f; echo $g",
	"export E=1; { E=2; export F=3; declare -p E F; } | { read a; read b; echo \"$a $b\"; }; declare -p E; declare -p F 2>&1 || echo no F",
	"x=1; { readonly x; x=2; } 2>/dev/null | { read l; }; x=3; echo $x",
	"x=1; { unset x; echo \"[${x-unset}]\"; } | { read l; echo $l; }; echo $x",
	"f() { echo a; }; { f() { echo b; }; f; } | { read l; echo $l; }; f",
	"a=(p); ( x=2; a+=(q); unset a[0] ); echo \"[$x] ${a[*]}\"",
	"x=1; x=2 eval 'echo $x' | { read l; echo $l; }; echo $x",
	"f() { echo \"$A\"; }; A=$(x=9; echo hi) f; echo \"[$A] [$x]\"",
	"x=1; { echo $x; } & x=2; wait; echo $x",
	"shopt -s lastpipe; x=1; echo 5 | read x; echo $x",
	"x=1; read y < <(x=2; echo $x); echo $x $y",
	"declare -i n=1; { n+=2; echo $n; } | { read l; echo $l; }; echo $n",
	"x=1; ( x=2; ( x=3; echo $x ); echo $x ); echo $x",
	"for i in 1 2 3; do x=$i; echo $x | { read y; x=$y$y; echo $y $x; }; done; echo $x",
	"export A=1; echo | { A=2; declare -p A; }; declare -p A; A=3; echo | { read; declare -p A; }",
	"f() { local x=in; echo | { read; echo $x; x=sub; }; echo $x; }; x=out; f; echo $x",
	"y=$(z=1; echo $z); w=$( (z=2); echo ${z-none}); echo $y $w ${z-none}",
	"set -- a b; { set -- c; echo $#; } | { read l; echo $l; }; echo $# $1",
	"x=1; f() { x=2; }; f | { read; }; echo $x; f; echo $x",
	"trap 'echo t' USR1; { trap 'echo u' USR1; trap -p USR1; } | { read l; echo \"$l\"; }; trap -p USR1",
	"trap 'echo bye' EXIT; ( echo in ); ( trap 'echo sub' EXIT; echo in2 ); echo out",
	"alias a1='echo A'; { alias b1='echo B'; unalias a1; alias; } | { read l; echo \"$l\"; }; alias",
	"{ unalias -a; alias; } | { read l; echo \"[$l]\"; }; alias z1=1; alias",
	"shopt -u nullglob; { shopt -s nullglob; shopt nullglob; } | { read l; echo $l; }; shopt nullglob; ( set -o noglob; shopt -o noglob ); shopt -o noglob",
	"f() { echo f; }; ( unset -f f; f 2>/dev/null || echo gone ); f; { g() { echo g; }; g; } | { read l; echo $l; }; g 2>/dev/null || echo no g",
	"f() { trap 'echo ret' RETURN; }; { f; g() { :; }; g; } | { read l; echo \"[$l]\"; }; trap -p RETURN",
)

func TestSubshellIsolation(t *testing.T) { shelltest.Run(t, subshellIsolationCases, nil) }
