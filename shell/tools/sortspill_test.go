package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// spillFiles are inputs large enough that -S 1K (or a small memory
// budget) makes sort write hundreds of runs and merge them in several
// rounds: keys with many ties, numbers of every shape, months, versions,
// case and blank variants, NULs, a line longer than the reader's buffer and
// a last line without a newline.
var spillFiles = func() map[string]string {
	rng := rand.New(rand.NewPCG(8, 10))
	words := []string{"apple", "Apple", " apple", "banana", "cherry", "date", "élan", "Zebra", "zebra", "", "a-b", "ab", "#x"}
	months := []string{"Jan", "feb", "MAR", "apr", "May", "jun", "xyz", " Dec"}
	var text, nums, table, mon, vers, hum, z strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&text, "%s %d\n", words[rng.IntN(len(words))], rng.IntN(50))
		fmt.Fprintf(&nums, "%s\n", []string{
			fmt.Sprint(rng.IntN(1000) - 500), fmt.Sprintf("%.3f", rng.Float64()*100), fmt.Sprintf("%de%d", rng.IntN(9), rng.IntN(4)),
			"-0", "abc", " 42", "0x1F", fmt.Sprint(rng.IntN(10)),
		}[rng.IntN(8)])
		fmt.Fprintf(&table, "k%d,%d,%s\n", rng.IntN(30), rng.IntN(7), words[rng.IntN(len(words))])
		fmt.Fprintf(&mon, "%s %d\n", months[rng.IntN(len(months))], i%9)
		fmt.Fprintf(&vers, "file%d.%d.txt\n", rng.IntN(20), rng.IntN(12))
		fmt.Fprintf(&hum, "%d%s\n", rng.IntN(2000), []string{"", "K", "M", "G", "k"}[rng.IntN(5)])
		fmt.Fprintf(&z, "%s %d\x00", words[rng.IntN(len(words))], rng.IntN(5))
	}
	text.WriteString(strings.Repeat("long", 40<<10) + "\n") // past the reader's 64 KiB buffer
	text.WriteString("no newline")
	return map[string]string{
		"text": text.String(), "nums": nums.String(), "table": table.String(), "mon": mon.String(),
		"vers": vers.String(), "hum": hum.String(), "z": z.String(),
		"s1": sortedCopy(text.String()), "s2": sortedCopy(table.String()),
	}
}()

func sortedCopy(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	// Byte order, as GNU sort in C.UTF-8.
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && lines[j] < lines[j-1]; j-- {
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestSortSpill compares sort with GNU sort when -S is far smaller than
// the input, so both spill to temporary files and merge them.
func TestSortSpill(t *testing.T) {
	t.Parallel()
	cases := []toolCase{
		{name: "default", args: []string{"sort", "-S", "1K", "text"}},
		{name: "r", args: []string{"sort", "-S", "1K", "-r", "text"}},
		{name: "u", args: []string{"sort", "-S", "1K", "-u", "text"}},
		{name: "f-u", args: []string{"sort", "-S", "1K", "-fu", "text"}},
		{name: "b", args: []string{"sort", "-S", "1K", "-b", "text"}},
		{name: "d", args: []string{"sort", "-S", "1K", "-d", "text"}},
		{name: "s-k1", args: []string{"sort", "-S", "1K", "-s", "-k1,1", "text"}},
		{name: "u-k1", args: []string{"sort", "-S", "1K", "-u", "-k1,1", "text"}},
		{name: "k2n-k1r", args: []string{"sort", "-S", "1K", "-k2,2n", "-k1,1r", "text"}},
		{name: "n", args: []string{"sort", "-S", "1K", "-n", "nums"}},
		{name: "nr", args: []string{"sort", "-S", "1K", "-nr", "nums"}},
		{name: "nu", args: []string{"sort", "-S", "1K", "-nu", "nums"}},
		{name: "ns", args: []string{"sort", "-S", "1K", "-ns", "nums"}},
		{name: "g", args: []string{"sort", "-S", "1K", "-g", "nums"}},
		{name: "h", args: []string{"sort", "-S", "1K", "-h", "hum"}},
		{name: "hu", args: []string{"sort", "-S", "2b", "-hu", "hum"}},
		{name: "M", args: []string{"sort", "-S", "1K", "-M", "mon"}},
		{name: "Ms-r", args: []string{"sort", "-S", "1K", "-Msr", "mon"}},
		{name: "V", args: []string{"sort", "-S", "1K", "-V", "vers"}},
		{name: "t-k", args: []string{"sort", "-S", "1K", "-t,", "-k2,2n", "-k1,1", "table"}},
		{name: "t-k-su", args: []string{"sort", "-S", "1K", "-t,", "-s", "-u", "-k2,2", "table"}},
		{name: "z", args: []string{"sort", "-S", "1K", "-z", "z"}},
		{name: "zu", args: []string{"sort", "-S", "1K", "-zu", "-k2,2n", "z"}},
		{name: "files", args: []string{"sort", "-S", "1K", "nums", "text", "hum"}},
		{name: "stdin", args: []string{"sort", "-S", "1K", "-n"}, stdin: sortFiles["nums"] + spillFiles["nums"]},
		{name: "o-same", args: []string{"sort", "-S", "1K", "-o", "text", "text"}},
		{name: "m", args: []string{"sort", "-m", "s1", "s2"}},
		{name: "m-o-same", args: []string{"sort", "-m", "-o", "s1", "s1", "s2"}},
		{name: "mu", args: []string{"sort", "-mu", "s1", "s1"}},
		{name: "c", args: []string{"sort", "-c", "text"}},
		{name: "c-ok", args: []string{"sort", "-c", "s1"}},
		{name: "S-percent", args: []string{"sort", "-S", "1%", "table"}},
		{name: "S-M", args: []string{"sort", "-S", "1M", "-n", "nums"}},
		{name: "S-bad", args: []string{"sort", "-S", "x", "text"}},
		{name: "S-bad-suffix", args: []string{"sort", "-S", "1x", "text"}},
		{name: "S-Q", args: []string{"sort", "-S", "5Q", "text"}},
		{name: "T-missing", args: []string{"sort", "-S", "1K", "-T", "/nonexistent", "text"}},
	}
	for i, tc := range cases {
		// Only the operands: every file is compared after the run.
		cases[i].files = map[string]string{}
		for _, a := range tc.args[1:] {
			if f, ok := spillFiles[a]; ok {
				cases[i].files[a] = f
			}
		}
	}
	runDiff(t, cases)
}

// TestSortMemoryBudget sorts through a real shell whose memory budget is a
// small part of the input, so sort spills to the sandbox's /tmp by itself,
// and compares with GNU sort; the temporary files must be gone afterwards,
// also when sort fails or is cancelled.
func TestSortMemoryBudget(t *testing.T) {
	testenv.Require(t, "bash")
	t.Parallel()
	host := t.TempDir()
	root := t.TempDir()
	for _, d := range []string{"workspace", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var big bytes.Buffer
	for big.Len() < 6<<20 {
		fmt.Fprintf(&big, "%d %x\n", rng.IntN(1<<20)-1<<19, rng.Uint64())
	}
	for _, dir := range []string{host, filepath.Join(root, "workspace")} {
		if err := os.WriteFile(filepath.Join(dir, "big"), big.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	view, err := storage.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	sh := shell.New(shell.Config{FS: view, Tools: All(), Limits: shell.Limits{MemoryBytes: 1 << 20}})
	for _, args := range [][]string{{"-n"}, {"-k2,2", "-u"}, {"-rn", "-s", "-k1,1"}, {}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command("sort", append(args, "big")...)
			cmd.Dir, cmd.Env = host, []string{"LC_ALL=C.UTF-8"}
			want, err := cmd.Output()
			if err != nil {
				t.Fatalf("GNU sort: %v", err)
			}
			var out, errb bytes.Buffer
			res := sh.Run(t.Context(), shell.Request{Script: "sort " + strings.Join(args, " ") + " big", Stdout: &out, Stderr: &errb})
			if res.ExitCode != 0 || res.Limit != "" {
				t.Fatalf("sort %v = %+v, stderr %q", args, res, errb.String())
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("sort %v: output differs from GNU sort (%d vs %d bytes)", args, out.Len(), len(want))
			}
			assertEmptyTmp(t, root)
		})
	}
	// A failing output and a cancelled sort leave no run behind either.
	var errb bytes.Buffer
	res := sh.Run(t.Context(), shell.Request{Script: "sort -n big -o /workspace/no/such/dir", Stderr: &errb})
	if res.ExitCode != 2 || !strings.Contains(errb.String(), "open failed") {
		t.Errorf("sort -o into a missing directory = %+v, stderr %q; want exit 2", res, errb.String())
	}
	assertEmptyTmp(t, root)
	// The input is more than the budget, so runs are on disk when it ends,
	// and the exec is cancelled right then.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res = sh.Run(ctx, shell.Request{Script: "sort", Stdin: &cancelAtEOF{r: bytes.NewReader(big.Bytes()), cancel: cancel}})
	if res.Limit != "canceled" {
		t.Errorf("cancelled sort = %+v, want canceled", res)
	}
	assertEmptyTmp(t, root)
}

// cancelAtEOF reads r, then cancels instead of reporting the end.
type cancelAtEOF struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (c *cancelAtEOF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.cancel()
		return n, context.Canceled
	}
	return n, err
}

func assertEmptyTmp(t *testing.T, root string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string(nil), names); diff != "" {
		t.Errorf("files left in /tmp (-want +got):\n%s", diff)
	}
}
