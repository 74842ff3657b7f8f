// Command testsummary reads `go test -json` output on stdin and prints each
// package's result, the output of failed tests, and a closing line
// "N passed, N failed, N skipped".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	var passed, failed, skipped int
	output := map[string]*strings.Builder{} // package/test -> output
	var failedTests []string
	pkgs := map[string]string{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Println(sc.Text()) // build errors are plain text
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			b := output[key]
			if b == nil {
				b = &strings.Builder{}
				output[key] = b
			}
			if b.Len() < 64<<10 {
				b.WriteString(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				// A package run twice (the suite's passes) keeps a failure.
				if strings.HasPrefix(pkgs[e.Package], "fail") {
					continue
				}
				pkgs[e.Package] = fmt.Sprintf("%-4s %s (%.1fs)", e.Action, e.Package, e.Elapsed)
				if e.Action == "fail" {
					failedTests = append(failedTests, key)
				}
				continue
			}
			switch e.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				failedTests = append(failedTests, key)
			case "skip":
				skipped++
			}
			if e.Action != "fail" {
				delete(output, key)
			}
		}
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		fmt.Println(pkgs[p])
	}
	for _, k := range failedTests {
		fmt.Printf("--- FAIL %s\n", k)
		if b := output[k]; b != nil {
			fmt.Print(b.String())
		}
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
}
