package tools

import "rung.dev/rung/shell"

// addFiles registers the file tools: ls, cat, tee, touch, mkdir, rmdir, rm,
// cp, mv, ln, readlink, realpath, basename, dirname, stat, du, df, chmod,
// tree, file and mktemp.
func addFiles(m map[string]shell.Tool) {
	m["ls"] = shell.Tool{Run: runLs, Check: lsCheck}
	m["cat"] = shell.Tool{Run: runCat, Check: catSpec.check}
	m["tee"] = shell.Tool{Run: runTee, Check: teeSpec.check}
	m["touch"] = shell.Tool{Run: runTouch, Check: touchSpec.check}
	m["mkdir"] = shell.Tool{Run: runMkdir, Check: mkdirSpec.check}
	m["rmdir"] = shell.Tool{Run: runRmdir, Check: rmdirSpec.check}
	m["rm"] = shell.Tool{Run: runRm, Check: rmSpec.check}
	m["chmod"] = shell.Tool{Run: runChmod, Check: chmodCheck}
	m["cp"] = shell.Tool{Run: runCp, Check: cpCheck}
	m["mv"] = shell.Tool{Run: runMv, Check: mvSpec.check}
	m["ln"] = shell.Tool{Run: runLn, Check: lnSpec.check}
	m["basename"] = shell.Tool{Run: runBasename, Check: basenameSpec.check}
	m["dirname"] = shell.Tool{Run: runDirname, Check: dirnameSpec.check}
	m["readlink"] = shell.Tool{Run: runReadlink, Check: readlinkSpec.check}
	m["realpath"] = shell.Tool{Run: runRealpath, Check: realpathSpec.check}
	m["du"] = shell.Tool{Run: runDu, Check: duSpec.check}
	m["df"] = shell.Tool{Run: runDf, Check: dfCheck}
	m["tree"] = shell.Tool{Run: runTree, Check: treeCheck}
	m["file"] = shell.Tool{Run: runFile, Check: fileSpec.check}
	m["mktemp"] = shell.Tool{Run: runMktemp, Check: mktempSpec.check}
	m["stat"] = shell.Tool{Run: runStat, Check: statCheck}
}
