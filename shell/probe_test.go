package shell_test

import (
	"testing"

	"rung.dev/rung/shell/shelltest"
)

var probeCases = group("probe",
	`x=5; y=$((x++ + ++x)); echo $x $y`,
	`a=1; a+=1; echo $a; declare -i b=1; b+=1; echo $b`,
	`echo $((0x10 + 010 + 10))`,
	`echo "$(( 7 > 3 ? 7 : 3 ))"`,
	`n=3; echo $(( n ** 2 )) $(( (n+1) * (n-1) ))`,
	`i=0; while (( i < 3 )); do echo -n "$i "; (( i++ )); done; echo`,
	`arr=(5 3 8 1); max=${arr[0]}; for v in "${arr[@]}"; do (( v > max )) && max=$v; done; echo $max`,
	`s="hello world"; echo ${s^} ${s^^o}`,
	`f() { local IFS=,; echo "$*"; }; f a b c`,
	`f() { echo $#; }; f "$@"; set -- "" ; f "$@"`,
	`printf '%s=%s\n' a 1 b 2`,
	`printf '%-10s|\n' left; printf '%10s|\n' right`,
	`printf '%05.1f\n' 3.14159`,
	`printf '%x\n' -1`,
	`printf '%o\n' -8`,
	`printf '%d\n' -0`,
	`printf '%s\n' $'\x41'`,
	`printf '%c' A B C; echo`,
	`printf '%.1s\n' abc`,
	`printf '%5.2s|\n' abc`,
	`printf '[%b]\n' '\0101'`,
	`printf '%b\n' '\x41\n'`,
	`echo -e '\0101'`,
	`echo -e '\101'`,
	`echo -e '\u00e9'`,
	`echo $'\101'`,
	"cat_() { while IFS= read -r l; do printf '%s\\n' \"$l\"; done; }; cat_ <<'X'\n  a\\tb $c\nX",
	`x=$'a\tb'; echo "$x" | while read -r p q; do echo "$q"; done`,
	`IFS=$'\n'; for l in $(printf 'a b\nc d\n'); do echo "[$l]"; done`,
	`set -- "a b" "c"; printf '%s\n' "$*" "$@"`,
	`declare -A h=([one]=1 [two]=2); echo ${#h[@]}; unset h[one]; echo ${#h[@]}`,
	`a=(1 2 3); echo "${a[@]:1}" "${a[*]:0:2}"`,
	`f() { return $1; }; f 3 || echo "failed $?"`,
	`v=$(f() { echo inner; }; f); echo $v`,
	`echo $(echo a) $(echo b c)`,
	`out=$(echo line1; echo line2); echo "$out" | while read l; do echo "> $l"; done`,
	`{ echo a; echo b; } > f.txt; while read l; do echo $l; done < f.txt`,
	`echo "a b" > "file name.txt"; read x < "file name.txt"; echo $x`,
	`for f in "file 1" "file 2"; do echo "$f" > "$f"; done; for f in file*; do echo "[$f]"; done`,
	`mkdir_() { :; }; echo x > .hidden; echo *; echo .h*`,
	`: > a.txt; : > b.txt; files=(*.txt); echo ${#files[@]} ${files[1]}`,
	`touch_() { :; }; for i in 3 1 2; do echo > f$i; done; echo f*`,
	`echo *.nomatch | { read x; echo "[$x]"; }`,
	`x=" a  b "; echo "[${x// /}]" "[${x##* }]"`,
	`x=abc; case $x in a*c) echo m1;; esac; case $x in ?b?) echo m2;; esac`,
	`case x in *) echo star;; x) echo x;; esac`,
	`case "[x]" in "[x]") echo brk;; esac`,
	`case a in (a) echo paren;; esac`,
	`v=3; case $v in [0-9]) echo digit;; esac`,
	`shopt -s extglob
case foo.txt in *.@(txt|md)) echo doc;; esac`,
	`shopt -s extglob
x=aaa; echo ${x##+(a)}end`,
	`shopt -s extglob
[[ abc == !(x*) ]] && echo neg`,
)

func TestProbe(t *testing.T) { shelltest.Run(t, probeCases, nil) }
