package shell_test

import (
	"testing"

	"rung.dev/rung/shell/shelltest"
)

var childFiles = map[string]string{
	"s.sh":  "#!/bin/bash\necho \"script $# $1\"\nexit 3\n",
	"e.sh":  "echo \"[$X][$Y]\"\n",
	"f.sh":  "f() { echo func; }\nf\nreturn 2 2>/dev/null\necho after\n",
	"ne.sh": "#!/bin/bash\necho not-executable\n",
}

var childCases = concat(
	withFiles(childFiles, group("child",
		`bash -c 'echo inner $0 $1' zero one`,
		`bash -c 'exit 7'; echo $?`,
		`sh -c 'echo via sh'`,
		`x=1; bash -c 'echo "[$x]"'`,
		`export X=1; Y=2; bash e.sh`,
		`X=a Y=b bash e.sh`,
		`bash s.sh arg; echo "rc=$?"`,
		`bash f.sh; echo "rc=$?"`,
		`f() { echo parent; }; bash -c 'f' 2>/dev/null; echo $?`,
		`bash -c 'cd /tmp; pwd'; pwd`,
		`bash -c 'echo $SHLVL'`,
		`echo 'echo from stdin' | bash`,
		`bash -e -c 'false; echo no'; echo $?`,
		`bash -c 'set -o | while read n s; do [ $n = errexit ] && echo $s; done'`,
		`bash nosuch.sh; echo $?`,
		`bash -c 'echo $#' a b c`,
		`bash -c 'trap "echo child-exit" EXIT; echo body'`,
		`echo "echo piped" | bash -s`,
		`chmod_() { :; }; ./ne.sh 2>/dev/null; echo $?`,
		`x=$(bash -c 'echo sub'); echo "$x"`,
	)),
	group("procsubst",
		`while read l; do echo "[$l]"; done < <(echo a; echo b)`,
		`echo <(true)`,
		`read a < <(echo first); echo $a`,
		`f() { while read l; do echo "f:$l"; done < "$1"; }; f <(echo arg)`,
		`echo x > >(read v; echo "got $v"); wait`,
		`exec 3< <(echo fd3); read v <&3; echo $v`,
		`x=<(true); echo ${x%/*}`,
		`while read a; do echo $a; done < <(for i in 1 2 3; do echo $i; done)`,
		`read -r a b < <(echo "1 2"); echo $b $a`,
		`mapfile -t arr < <(printf '%s\n' x y z); echo ${#arr[@]}`,
	),
	group("wait-bg",
		`f() { echo job; }; f & wait $!; echo "rc=$?"`,
		`(exit 5) & p=$!; wait $p; echo $?`,
		`true & false & wait; echo $?`,
		`echo a & wait; echo b & wait`,
		`x=$( { echo bg & wait; } ); echo "$x"`,
	),
)

func TestChild(t *testing.T) { shelltest.Run(t, childCases, nil) }
