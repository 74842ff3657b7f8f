package tools

import (
	"testing"

	"rung.dev/rung/shell"
)

const jqDoc = `{"name":"rung","version":"1.2.0","tags":["go","shell"],"count":3,"ratio":0.25,"nested":{"b":1,"a":{"z":true,"y":null}},"items":[{"id":2,"name":"b","ok":true},{"id":1,"name":"a","ok":false},{"id":3,"name":"c","ok":null}]}
`

var jqFiles = map[string]string{
	"doc.json":     jqDoc,
	"arr.json":     `[3,1,2]`,
	"multi.json":   "1 2\n\"three\" {\"x\":4}\n[5]\n",
	"bad.json":     "{\"a\":1}\n{bad}\n",
	"lines.txt":    "alpha\nbeta\ngamma",
	"nums.json":    `[1, 1.5, 100, 1e5, 1e15, 1e16, 1e17, 123456789012345678, 0.1, 0.0001, 0.00001, 1e-7, -0, -1.5e-10, 1e1000, 3.0, 12345678901234567890123]`,
	"unicode.json": `{"s":"héllo \u00e9 \ud83d\ude00 \u0001 \u007f tab\t"}`,
	"users.json":   `[{"user":"x","age":30,"role":"admin"},{"user":"y","age":25,"role":"dev"},{"user":"z","age":35,"role":"dev"}]`,
	"empty.json":   "",
}

func jc(name string, args ...string) toolCase {
	return toolCase{name: name, args: append([]string{"jq"}, args...), files: jqFiles}
}

func jin(name, stdin string, args ...string) toolCase {
	return toolCase{name: name, args: append([]string{"jq"}, args...), stdin: stdin}
}

func TestJQ(t *testing.T) {
	runDiffParallel(t, []toolCase{
		jc("identity pretty", ".", "doc.json"),
		jc("identity compact", "-c", ".", "doc.json"),
		jc("field", ".name", "doc.json"),
		jc("raw field", "-r", ".name", "doc.json"),
		jc("nested field", ".nested.a", "doc.json"),
		jc("key order preserved", ".nested", "doc.json"),
		jc("missing field", ".nope", "doc.json"),
		jc("array index", ".items[0]", "doc.json"),
		jc("negative index", ".items[-1].name", "doc.json"),
		jc("slice", "-c", ".items[1:]", "doc.json"),
		jc("iterate array", ".items[].name", "doc.json"),
		jc("iterate raw", "-r", ".items[] | .name", "doc.json"),
		jc("pipe select", "-c", ".items[] | select(.id > 1)", "doc.json"),
		jc("select field", ".items[] | select(.ok == true) | .id", "doc.json"),
		jc("map", "-c", ".items | map(.id)", "doc.json"),
		jc("sort_by", "-c", ".items | sort_by(.id) | map(.name)", "doc.json"),
		jc("length", ".items | length", "doc.json"),
		jc("keys sorted", "-c", ".nested | keys", "doc.json"),
		jc("keys_unsorted", "-c", ".nested | keys_unsorted", "doc.json"),
		jc("to_entries order", "-c", ".nested | to_entries", "doc.json"),
		jc("with_entries", "-c", ".nested | with_entries(.value |= tostring)", "doc.json"),
		jc("from_entries", "-c", `[{"key":"z","value":1},{"key":"a","value":2}] | from_entries`, "doc.json"),
		jc("object construction order", "-c", ".items[] | {name, id}", "doc.json"),
		jc("object construction pretty", ".items[0] | {z: .id, a: .name}", "doc.json"),
		jc("object construction string keys", "-c", `{"b": 1, "a": 2}`, "doc.json"),
		jc("object single key", "-c", ".items[] | {id}", "doc.json"),
		jc("object var key", "-c", `.name as $n | {$n, x: 1}`, "doc.json"),
		jc("array construction", "-c", "[.items[].id]", "doc.json"),
		jc("add", ".items | map(.id) | add", "doc.json"),
		jc("arithmetic", "-c", "[.count + 1, .count * 2, .count / 2, .count % 2, .count - 5]", "doc.json"),
		jc("string interpolation", "-r", `"\(.name) v\(.version)"`, "doc.json"),
		jc("interpolation numbers objects", "-r", `"\(1e17) \(1.5) \(.nested) \(.tags) \(null) \(true)"`, "doc.json"),
		jc("string ops", "-c", `[.name | ascii_upcase, length, test("u"), startswith("ru"), ltrimstr("r"), split("u")]`, "doc.json"),
		jc("join", "-r", `.tags | join(",")`, "doc.json"),
		jc("has in", "-c", `[has("name"), has("zzz"), (.tags | has(0))]`, "doc.json"),
		jc("if then else", "-c", `.items[] | if .ok then "yes" elif .ok == false then "no" else "unknown" end`, "doc.json"),
		jc("alternative", "-c", ".items[] | .ok // \"default\"", "doc.json"),
		jc("reduce", "reduce .items[] as $i (0; . + $i.id)", "doc.json"),
		jc("group_by", "-c", "group_by(.role) | map({role: .[0].role, n: length})", "users.json"),
		jc("min max", "-c", "[min_by(.age).user, max_by(.age).user]", "users.json"),
		jc("unique", "-c", "map(.role) | unique", "users.json"),
		jc("sort", "-c", "sort", "arr.json"),
		jc("reverse", "-c", "reverse", "arr.json"),
		jc("indices", "-c", `[.[] | . * 10]`, "arr.json"),
		jc("tostring tojson", "-c", `[.tags | tostring, tojson]`, "doc.json"),
		jc("tojson nested order", "-r", ".nested | tojson", "doc.json"),
		jc("fromjson", "-c", `"{\"a\":[1,2]}" | fromjson`, "doc.json"),
		jc("paths", "-c", "[paths]", "arr.json"),
		jc("getpath", "-c", `getpath(["nested","a","z"])`, "doc.json"),
		jc("del", "-c", "del(.items) | keys", "doc.json"),
		jc("update single key", "-c", ".nested.a.z |= not | .nested.a.z", "doc.json"),
		jc("formats", "-r", `.tags | @csv, @tsv, @sh, @json, @base64, (.[0] | @uri), (.[0] | @html)`, "doc.json"),
		jc("base64d", "-r", `"aGVsbG8=" | @base64d`, "doc.json"),
		jc("numbers format", "-c", ".", "nums.json"),
		jc("numbers pretty", ".", "nums.json"),
		jc("number arithmetic format", "-c", "[.[] * 3]", "nums.json"),
		jc("big int literal", "-n", "100000000000000000001"),
		jc("float ops", "-c", "-n", "[0.1 + 0.2, 1 / 3, 2 / 2, 1e300 * 1e10, pow(2; 64), 10 / 4]"),
		jc("floor sqrt", "-c", "-n", "[3.7 | floor, (16 | sqrt), (-1.5 | fabs), (2.5 | round)]"),
		jc("unicode output", ".", "unicode.json"),
		jc("ascii output", "-a", ".", "unicode.json"),
		jc("raw unicode", "-r", ".s", "unicode.json"),
		jc("multiple inputs", "-c", ".", "multi.json"),
		jc("slurp", "-c", "-s", ".", "multi.json"),
		jc("slurp length", "-s", "length", "multi.json"),
		jc("null input", "-n", "1 + 1"),
		jc("null input inputs", "-n", "-c", "[inputs]", "multi.json"),
		jc("input", "-c", "[., input]", "arr.json", "arr.json"),
		jc("raw input", "-R", ".", "lines.txt"),
		jc("raw input slurp", "-Rs", ".", "lines.txt"),
		jc("raw input null", "-nR", "-c", "[inputs]", "lines.txt"),
		jc("join output", "-j", ".tags[]", "doc.json"),
		jc("tab", "--tab", ".nested", "doc.json"),
		jc("indent 4", "--indent", "4", ".nested", "doc.json"),
		jc("indent 0", "--indent", "0", ".nested", "doc.json"),
		jc("indent 1", "--indent", "1", ".tags", "doc.json"),
		jc("sort keys", "-S", ".", "doc.json"),
		jc("sort keys compact", "-S", "-c", ".nested", "doc.json"),
		jc("combined flags", "-rc", ".items[0].name, .tags", "doc.json"),
		jc("arg", "-n", "--arg", "v", "hello", "$v"),
		jc("arg in filter", "--arg", "n", "a", "-c", ".items[] | select(.name == $n)", "doc.json"),
		jc("argjson", "-n", "-c", "--argjson", "v", `{"b":[1,2],"a":1}`, "$v"),
		jc("slurpfile", "-n", "-c", "--slurpfile", "m", "multi.json", "$m"),
		jc("rawfile", "-n", "--rawfile", "t", "lines.txt", "$t"),
		jc("args", "-n", "-c", "$ARGS", "--args", "a", "b"),
		jc("jsonargs", "-n", "-c", "$ARGS.positional", "--jsonargs", "1", `{"x":2}`),
		jc("named args", "-n", "-c", "--arg", "a", "1", "$ARGS.named"),
		jc("env", "-n", "-r", "env.TZ, $ENV.TZ"),
		jc("exit status true", "-e", ".count", "doc.json"),
		jc("exit status null", "-e", ".missing", "doc.json"),
		jc("exit status false", "-e", ".items[1].ok", "doc.json"),
		jc("exit status empty", "-e", "empty", "doc.json"),
		jc("runtime error continues", ".[]?, error(\"x\")", "arr.json"),
		jc("error then more inputs", "-c", ". as $x | if $x == 2 then error(\"two\") else $x end", "multi.json"),
		jc("bad json input", "-c", ".", "bad.json"),
		jc("missing file", ".", "nope.json"),
		jc("missing then good", "-c", ".", "nope.json", "arr.json"),
		jc("empty file", ".", "empty.json"),
		jc("no filter", "-n"),
		jc("bad option", "-x", "."),
		jc("two files", "-c", ".", "arr.json", "multi.json"),
		jc("try catch", "-c", `try error("boom") catch .`, "doc.json"),
		jc("optional", "-c", "[.[]?]", "arr.json"),
		jc("recurse numbers", "-c", "[.. | numbers]", "arr.json"),
		jc("limit first", "-c", "-n", "[limit(3; range(10))], first(range(5;10))"),
		jc("range", "-c", "-n", "[range(0; 10; 3)]"),
		jc("splits regex", "-c", "-n", `"a1b22c" | [splits("[0-9]+")]`),
		jc("sub gsub", "-c", "-n", `"hello world" | sub("o"; "0"), gsub("o"; "0")`),
		jc("test regex flags", "-c", "-n", `["ABC" | test("abc"; "i"), test("abc")]`),
		jc("tonumber", "-c", "-n", `["42", "3.5"] | map(tonumber)`),
		jc("any all", "-c", "-n", "[[1,2] | any(. > 1), all(. > 1)]"),
		jc("flatten", "-c", "-n", "[1,[2,[3]]] | flatten"),
		jc("to_entries pretty", ".nested.a | to_entries", "doc.json"),
		jc("iterate object values", "-c", "[.[] | type]", "doc.json"),
		jc("iterate nested object", "-c", ".nested.a[]", "doc.json"),
		jc("iterate object optional", "-c", "[.nested[]?]", "doc.json"),
		jc("map on object", "-c", ".nested | map(type)", "doc.json"),
		jc("map_values object", "-c", ".nested.a | map_values(tostring)", "doc.json"),
		jc("map_values array", "-c", ".tags | map_values(ascii_upcase)", "doc.json"),
		jc("add object values", "-c", `{"b":"x","a":"y"} | add`, "doc.json"),
		jc("recurse order", "-c", "[.. | scalars]", "doc.json"),
		jc("recurse arrays", "-c", "[.. | numbers]", "doc.json"),
		jc("json format order", "-r", ".nested | @json", "doc.json"),
		jc("text format", "-r", ".tags | @text", "doc.json"),
		jc("paths sorted input", "-c", "[paths]", "sorted.json"),
		jc("leaf_paths sorted input", "-c", "[leaf_paths]", "sorted.json"),
		jc("paths filter", "-c", "[paths(type == \"number\")]", "sorted.json"),
		jc("path of iteration", "-c", "[path(.items[])]", "doc.json"),
		jc("update array elements", "-c", ".tags[] |= ascii_upcase | .tags", "doc.json"),
		jc("del array element", "-c", "del(.tags[0]) | .tags", "doc.json"),
		jc("reduce over object", "-c", "reduce .nested.a[] as $v (0; . + 1)", "doc.json"),
		jc("keys_unsorted iterate", "-r", ".nested | keys_unsorted[]", "doc.json"),
		jc("stdin dash", "-c", ".", "-"),
		jc("from file", "-r", "-f", "prog.jq", "doc.json"),
		jc("from file long", "--from-file", "prog.jq", "doc.json"),
		jc("from file missing", "-f", "nope.jq", "doc.json"),
		jin("stdin input", `{"b":2,"a":1}`, "."),
		jin("stdin no trailing newline", `[1,2]`, "-c", "."),
		jin("stdin multiple docs", "{\"a\":1}{\"a\":2}", ".a"),
		jin("stdin string escapes", `"a\"b\\c\/d\u0000\b\f"`, "."),
		jin("stdin raw string output", `"line1\nline2"`, "-r", "."),
		jin("stdin deep nesting", `{"a":{"b":{"c":[[[]],{}]}}}`, "."),
		jin("stdin empty object array", `{"a":{},"b":[]}`, "."),
		jin("stdin true false null", `[true,false,null]`, "."),
		jin("stdin large array", `[`+"1,2,3,4,5,6,7,8,9,10"+`]`, "-c", "map(. * .)"),
	}, 4)
}

// TestJQRefuses checks that output whose object key order gojq cannot
// reproduce, or a run-time error gojq words its own way, is refused before anything is written (exit 125), so the
// router runs the real jq instead.
func TestJQRefuses(t *testing.T) {
	cases := []toolCase{
		jc("capture object", "-c", "-n", `"xyz-123" | capture("(?<a>[a-z]+)-(?<n>[0-9]+)")`),
		jc("merge objects", "-c", `. + {"zz": 1}`, "doc.json"),
		jc("update keeps order", "-c", `.count = 4`, "doc.json"),
		jc("del", "-c", `del(.name)`, "doc.json"),
		jc("computed key", "-c", `{(.name): 1, a: 2}`, "doc.json"),
		jc("update through iteration", "-c", ".nested | .[] |= 1", "doc.json"),
		jc("paths unordered input", "-c", "[paths]", "doc.json"),
		jc("paths unordered count", "-c", "[paths] | length", "users.json"),
		jc("path of recurse", "-c", "[path(..)]", "doc.json"),
		jc("runtime error in gojq's words", ".name.x", "doc.json"),
		jc("compile error", ".a.", "doc.json"),
		jc("unknown function", "nosuchfn", "doc.json"),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := root + "/workspace"
			writeFiles(t, dir, tc.files)
			out, _, status := runOurs(t, tc, root)
			if status != shell.ExitUnsupported || out != "" {
				t.Errorf("%q = status %d stdout %q, want refusal (125, no output)", tc.args, status, out)
			}
		})
	}
}
