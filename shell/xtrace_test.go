package shell_test

import (
	"testing"

	"rung.dev/rung/shell/shelltest"
)

// xtraceCases send stderr to stdout so the trace text is compared
// exactly.
var xtraceCases = group("xtrace-exact",
	`exec 2>&1; set -x; echo a b`,
	`exec 2>&1; set -x; x=1; y="a b"`,
	`exec 2>&1; set -x; echo "it's" '' "a b"`,
	`exec 2>&1; set -x; f() { echo in; }; f 1 2`,
	`exec 2>&1; set -x; [[ a == a ]]`,
	`exec 2>&1; set -x; (( 1 + 2 ))`,
	`exec 2>&1; set -x; echo $(echo sub)`,
	`exec 2>&1; set -x; true | true`,
	`exec 2>&1; set -x; for i in 1 2; do :; done`,
	`exec 2>&1; set -x; if true; then echo t; fi`,
	`exec 2>&1; set -x; a=(1 2)`,
	`exec 2>&1; set -x; local_() { :; }; export E=1`,
	`exec 2>&1; set -x; echo $'\t'`,
	`exec 2>&1; set -x; x=$(echo y)`,
	`exec 2>&1; set -x; case a in a) echo m;; esac`,
	`exec 2>&1; set -x; while false; do :; done`,
	`exec 2>&1; set -x; declare -i n=1`,
	`exec 2>&1; set -x; let n=2`,
	`exec 2>&1; set -x; echo >/dev/null`,
	`exec 2>&1; set -x; A=1 true`,
	`exec 2>&1; PS4='+$LINENO: '; set -x; echo hi`,
	`exec 2>&1; set -x; set +x`,
	`exec 2>&1; set -x; echo 'a*' "~" '$x'`,
)

func TestXtrace(t *testing.T) { shelltest.Run(t, xtraceCases, nil) }
