package shell_test

import (
	"context"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/shell/shelltest"
)

// arrayStorageCases check the indexed array's storage (sorted slices, see
// array.go), string appends in place (strbuf.go) and variables taken back
// from finished subshells without a copy (scope.release) against bash:
// sparse arrays, inserts below the largest index, unsets at the front, in
// the middle and at the end, negative subscripts, slices of sparse arrays,
// and appends racing with the subshells and jobs that share the value.
var arrayStorageCases = group("array-storage",
	"a=(); for i in 5 3 9 1 7; do a[i]=v$i; done; echo \"${!a[@]} / ${a[*]} / ${#a[@]}\"",
	"a=(x y z); a[10]=t; a+=(u); a[-1]=U; a[5]=m; echo \"${!a[@]} ${a[*]} ${a[-2]}\"; declare -p a",
	"a=(0 1 2 3 4 5); unset 'a[0]' 'a[3]' 'a[5]'; a+=(n); echo \"${!a[@]} ${a[*]} ${#a[@]} ${a[-1]}\"",
	"a=(0 1 2 3 4 5 6); unset 'a[2]'; echo \"${a[@]:1:3} | ${a[@]:2} | ${a[@]: -2} | ${a[@]:9} | ${a[*]:0:0}|\"",
	"a=([3]=c [1]=a [7]=g); echo \"${a[@]:2:2} | ${a[@]:4} | ${a[@]:-9}\"; echo ${a[0]-unset} ${a[-1]}",
	"a=(); for ((i=0;i<50;i++)); do a+=(\"$(echo $i)\"); done; echo ${#a[@]} ${a[0]} ${a[49]} ${a[@]:48}",
	"a=(1 2); b=$( a+=(3); echo ${#a[@]} ); a+=(4); echo $b ${a[*]}",
	"a=(1 2); { echo job ${a[*]}; } & a+=(3); a[0]=X; wait; echo ${a[*]}",
	"a=(1 2); echo | { a+=(p); echo ${a[*]}; }; a+=(3); echo ${a[*]}",
	"s=; for ((i=0;i<300;i++)); do s+=ab; done; echo ${#s} ${s:590}",
	"s=$(printf '%0300d' 0); t=$( s+=X; echo ${#s} ); s+=Y; u=$( s+=Z; echo ${s: -2} ); echo $t ${#s} $u ${s: -2}",
	"s=$(printf '%0300d' 0); { s+=J; echo job ${#s} ${s: -1}; } & s+=M; wait; s+=N; echo ${#s} ${s: -2}",
	"s=$(printf '%0300d' 0); declare -u s; s+=ab; echo ${s: -3}; declare +u s; declare -i n=5; n+=3; echo $n",
	"unset s; s+=$(printf '%0300d' 7); echo ${#s} ${s: -1}; readonly s; s+=x 2>/dev/null; echo ${#s}",
	"a=(x); a[0]+=$(printf '%0300d' 1); echo ${#a[0]}; a+=([0]=y); echo ${a[*]}",
	"a=(a b c d); a=(\"${a[@]:1}\"); echo \"${!a[@]} ${a[*]}\"; unset 'a[-1]'; echo \"${!a[@]} ${a[*]}\"",
	"mapfile -t a < <(printf '%s\\n' p q r); a[7]=z; mapfile -t -O 4 a < <(echo s); echo \"${!a[@]} ${a[*]}\"",
	"read -ra a <<< 'x y z'; unset 'a[1]'; a+=(w); echo \"${!a[@]} ${a[*]}\"; [[ abc =~ (a)(b) ]]; echo ${BASH_REMATCH[@]} ${#BASH_REMATCH[@]}",
)

func TestArrayStorage(t *testing.T) { shelltest.Run(t, arrayStorageCases, nil) }

// TestArrayAppendBomb is the appending loop of issue 10 (finding 8): it
// ran for the whole wall time, hitting no limit, because each append
// scanned every index. It must now reach the array limit.
func TestArrayAppendBomb(t *testing.T) {
	for _, tc := range []struct{ name, script, limit string }{
		{"array", "a=(); while true; do a+=(xxxxxxxxxxxxxxxx); done", "array_elems"},
		{"array count", "a=(); while true; do a+=(x); n=${#a[@]}; done", "array_elems"},
		{"array subst", "a=(); while true; do a+=(\"$(echo x)\"); done", "array_elems"},
		{"string", "s=; while true; do s+=xxxxxxxxxxxxxxxx; done", "string_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := newShell(t, shell.Config{Limits: shell.Limits{ArrayElems: 100_000, StringBytes: 2 << 20, LoopIterations: 1 << 40, Commands: 1 << 40}})
			// Quadratic appends took minutes to get here; the timeout only
			// catches a hang.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			res, _, stderr := run(t, sh, ctx, tc.script)
			if res.Limit != tc.limit || res.ExitCode != 126 {
				t.Fatalf("Run(%q) = %+v, stderr %q; want limit %s, exit 126", tc.script, res, stderr, tc.limit)
			}
		})
	}
}
