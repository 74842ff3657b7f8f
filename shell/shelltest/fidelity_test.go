package shelltest_test

import (
	"fmt"
	"testing"

	"rung.dev/rung/shell/shelltest"
	"rung.dev/rung/shell/tools"
)

// fidelityToolScripts pin interpreter and tool behaviours found missing
// by the conformance fixtures: /dev/fd operands, jq inputs and named
// arguments, the shared stdin offset head and grep -m leave behind,
// pipes whose reader never reads, parse-time rewrites.
var fidelityToolScripts = []string{
	"seq 10 > f; { head -n 2; echo ---; cat; } < f",
	"seq 10 > f; { head -c 3; echo; echo ---; head -n 1; } < f",
	"seq 5 > f; { read a; head -n 1; read b; echo \"$a $b\"; } < f",
	"seq 5 | { head -n 1; cat; }",
	"seq 10 > f; { sed -n 1p; cat; } < f; echo; { grep -m1 3; cat; } < f",
	"seq 10 > f; { tail -n 2; cat; } < f; { awk 'NR==2{exit}'; cat; } < f",
	"seq 6 > f; while read x; do echo \"got $x\"; head -n 1; done < f",
	"printf 'a\\nb\\nc\\n' > f; exec 3< f; head -n 1 <&3; cat <&3",
	"seq 3 > f; { cat > /dev/null; read x; echo \"[$x]\"; } < f",
	"seq 5 > f; { head -n 2 > /dev/null; wc -l; } < f",
	"seq 5 > f; (head -n 1; head -n 1) < f",
	"seq 20 > f; { head -n 1 >/dev/null; sort -n | head -n 2; } < f",
	"echo x > out; { echo a; false; } > out; cat out; { echo b; } >> out 2>&1; cat out",
	"for i in 1 2; do echo $i; done > out; cat out; while read l; do echo \"<$l>\"; done < out > out2; cat out2",
	"exec 3>&1; echo to3 >&3; exec 1>/dev/null; echo hidden; exec 1>&3; echo visible",
	"{ echo out; echo err >&2; } 2>/dev/null; { echo a >&2; } 2>&1 | tr a A",
	"cat <<EOF > f\nx\nEOF\ncat f; cat < f | wc -c; echo $((  $(wc -l < f) + 1 ))",
	"seq 10 > f; { grep -m1 3; cat; } < f; { grep -m2 -A1 5; cat; } < f",
	"seq 10 | { grep -m1 3; cat; }",
	"seq 5 > f; { grep -c -m1 2; cat; } < f; { grep -q 2; cat; } < f",
	"printf 'a\\nb\\n' > a.txt; printf 'a\\nc\\n' > b.txt; diff <(sort a.txt) <(sort b.txt) > /dev/null; echo rc=$?; diff <(echo a) <(echo a); echo rc=$?",
	"grep -q zzz <(echo hi); echo rc=$?; echo ignored | grep -c . <(printf 'a\\nb\\n'); grep -H x <(echo x) /dev/null; echo rc=$?",
	"printf 'first' > a.txt; printf 'second\\n' > b.txt; printf 'x\\ny' > c.txt; jq -R . a.txt b.txt c.txt a.txt",
	"jq -cn --arg b foo --arg a bar --arg b baz '$ARGS.named'; jq -n --arg b foo --argjson a 1 '$ARGS'; jq -n --arg b foo --arg b baz '$b'",
	"echo hi > >(while read -r l; do :; done; false); echo rc=$?; seq 1 100000 | head -1; echo ${PIPESTATUS[@]}; grep x nofile | head; echo ${PIPESTATUS[@]}",
	"unset x; cat ${x:-<(printf ok)}; echo; HOME=/home/demo; cat <<EOF$(echo 'x')\n$HOME\nEOF$(echo x)",
	"true\ncat <(\necho outer=$LINENO\ncat <(echo inner=$LINENO)\n)",
}

func TestToolsFidelity(t *testing.T) {
	cases := make([]shelltest.Case, len(fidelityToolScripts))
	for i, s := range fidelityToolScripts {
		cases[i] = shelltest.Case{Name: fmt.Sprintf("fidelity/%02d", i), Script: s}
	}
	shelltest.Run(t, cases, tools.All())
}
