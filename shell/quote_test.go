package shell_test

import (
	"testing"

	"rung.dev/rung/shell/shelltest"
)

var quoteCases = group("quote-out",
	`printf '%q\n' 'a~b' '~x' 'é' 'a"b' 'a\b' '$(x)' '!' '#x' 'a#b' '*' '[x]' '{a,b}' 'x=y'`,
	`printf '%q\n' $'a\nb' $'tab\there' $'\x01'`,
	`x=$'a\nb'; echo ${x@Q}`,
	`x='a'\''b'; echo ${x@Q}`,
	`x=''; echo "[${x@Q}]"`,
	`x=$'a\nb' y='q"t' z='$d'; declare -p x y z`,
	`a=('a b' "c'd" $'e\nf'); declare -p a`,
	`a=(x y); echo "${a[@]@Q}"`,
	`x='a b'; set | while IFS= read -r l; do case $l in x=*) echo "$l";; esac; done`,
	`f() { :; }; x=1; declare -p x | { read -r l; echo "$l"; }`,
	`declare -x X=1; export -p | while IFS= read -r l; do case $l in *" X="*) echo "$l";; esac; done`,
	`alias l='ls -l'; alias q="it's"; alias`,
	`trap 'echo "a b"' EXIT; trap -p; trap - EXIT`,
)

func TestQuoteOutput(t *testing.T) { shelltest.Run(t, quoteCases, nil) }
