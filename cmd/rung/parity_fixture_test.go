package main

import (
	"archive/tar"
	"bytes"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// parityTime is the modification time of every starting file, so that
// listings with times (ls -l, find -newer, stat) are the same in both
// runs of a case.
var parityTime = time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC)

// parityFiles are the starting files of every case of the suite, relative
// to /workspace. A name ending in "/" is a directory; "@x" at the end of a
// name makes it executable; a value starting with "->" is a symlink.
var parityFiles = map[string]string{
	"notes.txt":   "alpha beta\ngamma delta\nAlpha Beta\n\nepsilon zeta eta\nbeta gamma\nlast line\n",
	"words.txt":   "pear\napple\nbanana\napple\ncherry\nbanana\napple\ndate\nfig\n",
	"numbers.txt": "10\n2\n33\n4\n-5\n100\n2.5\n007\n1e3\n42\n",
	"data.csv":    "id,name,city,score\n1,Ann,Oslo,90\n2,Bob,Rome,75\n3,Cid,Oslo,82\n4,Dee,Lima,75\n5,Eve,Rome,99\n",
	"table.tsv":   "name\tqty\tprice\nnut\t3\t0.50\nbolt\t10\t0.25\nwasher\t7\t0.05\n",
	"config.json": `{"name":"demo","version":"1.2.3","tags":["a","b","c"],"deps":{"left":"^1.0","right":"~2.1"},` +
		`"items":[{"id":1,"ok":true,"n":2.5},{"id":2,"ok":false,"n":null},{"id":3,"ok":true,"n":7}],"empty":{}}` + "\n",
	"users.jsonl":        `{"user":"ann","age":31,"roles":["admin","dev"]}` + "\n" + `{"user":"bob","age":25,"roles":["dev"]}` + "\n" + `{"user":"cid","age":40,"roles":[]}` + "\n",
	"log.txt":            "2024-01-01 INFO start\n2024-01-01 WARN disk 80%\n2024-01-02 ERROR failed to open /etc/x\n2024-01-02 INFO retry\n2024-01-03 ERROR timeout after 30s\n2024-01-03 INFO done\n",
	"mixed.txt":          "Tab\there\ntrailing space \n  leading\nUPPER lower\nä ö ü é\n$HOME and `cmd`\nback\\slash\n",
	"crlf.txt":           "one\r\ntwo\r\nthree\r\n",
	"nonl.txt":           "no newline at end",
	"empty.txt":          "",
	"my file.txt":        "a file with spaces\n",
	".hidden":            "hidden\n",
	"link.txt":           "->notes.txt",
	"dirlink":            "->src",
	"broken":             "->nowhere",
	"Makefile":           "all:\n\techo built\n\nclean:\n\trm -f out\n",
	"README.md":          "# Demo\n\nSome *text* here.\n\n## Usage\n\nRun `make`.\n",
	"src/":               "",
	"src/main.py":        "import sys\n\ndef main():\n    print('hello from python')\n    return 0\n\nif __name__ == '__main__':\n    sys.exit(main())\n",
	"src/app.js":         "const x = 42;\nconsole.log('hello from node', x);\n// TODO: more\n",
	"src/main.go":        "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\") // TODO\n}\n",
	"src/util.sh@x":      "#!/bin/bash\necho \"util: $*\"\nexit 3\n",
	"src/lib/":           "",
	"src/lib/a.txt":      "lib a\nTODO fix\n",
	"src/lib/b.txt":      "lib b\n",
	"src/lib/c.md":       "# c\n",
	"deep/a/b/c/d.txt":   "deep file\n",
	"scripts/":           "",
	"scripts/hello.sh@x": "#!/bin/bash\necho \"hello $1\"\n",
	"scripts/fail.sh@x":  "#!/bin/bash\necho failing >&2\nexit 7\n",
	"scripts/count.sh":   "for i in 1 2 3; do echo \"n=$i\"; done\n",
	"scripts/lib.sh":     "greet() { echo \"hi $1\"; }\nLIBVAR=loaded\n",
	"scripts/py.sh@x":    "#!/bin/bash\npython3 -c 'print(6*7)'\n",
	"emptydir/":          "",
	"bin.dat":            "\x00\x01\x02binary\xff\xfe\n",
}

// buildFixture is the tar of parityFiles plus repo/, a git repository of
// three commits made by real git in sandbox id's container (with fixed
// dates and author, so every hash is the same each run).
func (p *parityRun) buildFixture(id string) []byte {
	t := p.t
	ctx := t.Context()
	const script = `set -e
export GIT_AUTHOR_NAME=Ann GIT_AUTHOR_EMAIL=ann@example.com GIT_COMMITTER_NAME=Ann GIT_COMMITTER_EMAIL=ann@example.com
export GIT_AUTHOR_DATE='2024-01-10T12:00:00Z' GIT_COMMITTER_DATE='2024-01-10T12:00:00Z'
rm -rf /tmp/repo && mkdir /tmp/repo && cd /tmp/repo
git init -q -b main .
printf 'line 1\nline 2\n' > a.txt && printf 'b\n' > b.txt && mkdir sub && printf 'deep\n' > sub/c.txt
git add . && git commit -q -m 'first commit'
export GIT_AUTHOR_DATE='2024-01-11T12:00:00Z' GIT_COMMITTER_DATE='2024-01-11T12:00:00Z'
printf 'line 1\nline 2 changed\nline 3\n' > a.txt && git commit -q -am 'change a (fix #12)'
export GIT_AUTHOR_NAME=Bob GIT_AUTHOR_EMAIL=bob@example.com GIT_AUTHOR_DATE='2024-01-12T12:00:00Z' GIT_COMMITTER_DATE='2024-01-12T12:00:00Z'
git rm -q b.txt && printf 'new\n' > n.txt && git add n.txt && git commit -q -m 'remove b, add n'
git tag v1.0 HEAD~1
printf 'dirty\n' >> a.txt && printf 'untracked\n' > u.txt
`
	res, err := p.c.Exec(ctx, id, client.ExecRequest{Command: script, Backend: rung.BackendContainer})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("make the fixture's git repository: %v %+v", err, res)
	}
	rc, err := p.c.DownloadTar(ctx, id, "/tmp/repo")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	return tarOf(parityFiles, repo)
}

// tarOf makes a tar of files (see parityFiles), every entry dated
// parityTime, followed by the entries of the tar extra under "repo/".
func tarOf(files map[string]string, extra []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Every parent directory gets an entry of its own, so that its time
	// is parityTime too (tar archives of it hold the time).
	all := map[string]string{}
	for n, v := range files {
		all[n] = v
		for d := path.Dir(strings.TrimSuffix(n, "/")); d != "."; d = path.Dir(d) {
			if _, ok := files[d+"/"]; !ok {
				all[d+"/"] = ""
			}
		}
	}
	files = all
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := files[n]
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: parityTime, Typeflag: tar.TypeReg, Size: int64(len(v))}
		if name, ok := strings.CutSuffix(n, "@x"); ok {
			h.Name, h.Mode = name, 0o755
		}
		switch {
		case strings.HasSuffix(n, "/"):
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case strings.HasPrefix(v, "->"):
			h.Typeflag, h.Linkname, h.Mode, h.Size = tar.TypeSymlink, v[2:], 0o777, 0
		}
		tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(v))
		}
	}
	if extra != nil {
		tw.WriteHeader(&tar.Header{Name: "repo/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: parityTime})
		tr := tar.NewReader(bytes.NewReader(extra))
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			name := strings.TrimPrefix(h.Name, "./")
			if name == "" || name == "." {
				continue
			}
			h.Name = "repo/" + name
			h.ModTime = parityTime
			tw.WriteHeader(h)
			io.Copy(tw, tr)
		}
	}
	tw.Close()
	return buf.Bytes()
}
