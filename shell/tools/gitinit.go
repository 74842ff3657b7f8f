package tools

import (
	"context"
	"errors"
	iofs "io/fs"

	"fmt"
	"path"
	"rung.dev/rung/shell"
	"strings"
)

// This file implements "git init": it lays out .git the way git 2.39
// does (without the sample hooks).

var gitInitOpts = NewOptions("b,initial-branch=", "q,quiet")

const gitInitConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"

const gitInitExclude = "# git ls-files --others --exclude-from=.git/info/exclude\n" +
	"# Lines that start with '#' are comments.\n" +
	"# For a project mostly in C, the following would be a good set of\n" +
	"# exclude patterns (uncomment them if you want to use them):\n" +
	"# *.[oa]\n# *~\n"

// gitInit is "git init [-q] [-b branch] [dir]".
func gitInit(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	quiet, branch := false, ""
	for _, o := range opts {
		switch o.Key {
		case "quiet":
			quiet = true
		case "initial-branch":
			branch = o.Value
		}
	}
	if len(args) > 1 {
		return g.c.Fail("git init with several directories")
	}
	dir := path.Clean(g.dir)
	if len(args) == 1 {
		dir = path.Clean(gitAbsFrom(dir, args[0]))
	}
	fs := g.c.FS
	gitDir := dir + "/.git"
	if fi, err := fs.Stat(gitDir + "/HEAD"); err == nil && !fi.IsDir() {
		if branch != "" {
			fmt.Fprintf(g.c.Stderr, "warning: re-init: ignored --initial-branch=%s\n", branch)
		}
		if !quiet {
			fmt.Fprintf(g.c.Stdout, "Reinitialized existing Git repository in %s/\n", gitDir)
		}
		return 0
	}
	if branch == "" {
		if v, ok := g.config("init.defaultbranch"); ok {
			branch = v
		} else {
			branch = "master"
		}
		if !quiet && branch == "master" {
			fmt.Fprint(g.c.Stderr, "hint: Using 'master' as the name for the initial branch. This default branch name\n"+
				"hint: is subject to change. To configure the initial branch name to use in all\n"+
				"hint: of your new repositories, which will suppress this warning, call:\n"+
				"hint: \nhint: \tgit config --global init.defaultBranch <name>\n")
		}
	}
	if strings.ContainsAny(branch, " ~^:?*[\\") || branch == "" {
		return g.fatal("invalid initial branch name: '%s'", branch)
	}
	for _, d := range []string{dir, gitDir, gitDir + "/branches", gitDir + "/hooks", gitDir + "/info",
		gitDir + "/objects", gitDir + "/objects/info", gitDir + "/objects/pack", gitDir + "/refs",
		gitDir + "/refs/heads", gitDir + "/refs/tags"} {
		if err := fs.Mkdir(d, 0o755); err != nil && !errors.Is(err, iofs.ErrExist) {
			return g.fatal("cannot mkdir %s: %s", d, shell.ErrText(err))
		}
	}
	files := [][2]string{
		{"HEAD", "ref: refs/heads/" + branch + "\n"},
		{"config", gitInitConfig},
		{"description", "Unnamed repository; edit this file 'description' to name the repository.\n"},
		{"info/exclude", gitInitExclude},
	}
	for _, f := range files {
		if err := g.writeFile(gitDir+"/"+f[0], []byte(f[1])); err != nil {
			return g.fatal("%v", err)
		}
	}
	if !quiet {
		fmt.Fprintf(g.c.Stdout, "Initialized empty Git repository in %s/\n", gitDir)
	}
	return 0
}
