package tools

import "rung.dev/rung/shell"

// addText registers the text tools: head, tail, wc, sort, uniq, cut, tr,
// comm, join, paste, column, nl, tac, rev, fold, expand, unexpand, split,
// csplit, seq, yes, od, xxd, hexdump, base64, the *sum family, expr,
// date, sleep, env, printenv, timeout, true, false, echo, printf, test, [.
func addText(m map[string]shell.Tool) {
	m["head"] = shell.Tool{Run: runHead, Check: headCheck}
	m["tail"] = shell.Tool{Run: runTail, Check: tailCheck}
	m["sort"] = shell.Tool{Run: runSort, Check: sortCheck}
	m["cut"] = shell.Tool{Run: runCut, Check: cutOpts.Check}
	m["tr"] = shell.Tool{Run: runTr, Check: trOpts.Check}
	m["uniq"] = shell.Tool{Run: runUniq, Check: uniqOpts.Check}
	m["echo"] = shell.Tool{Run: runEcho, Check: echoCheck}
	m["printf"] = shell.Tool{Run: runPrintf, Check: printfCheck}
	m["test"] = shell.Tool{Run: runTest, Check: testCheck}
	m["["] = shell.Tool{Run: runTest, Check: testCheck}
	m["true"] = shell.Tool{Run: runTrue, Check: trueCheck}
	m["false"] = shell.Tool{Run: runFalse, Check: trueCheck}
	m["seq"] = shell.Tool{Run: runSeq, Check: seqCheck}
	m["yes"] = shell.Tool{Run: runYes, Check: trueCheck}
	m["sleep"] = shell.Tool{Run: runSleep, Check: sleepCheck}
	m["env"] = shell.Tool{Run: runEnv, Check: envCheck}
	m["printenv"] = shell.Tool{Run: runPrintenv, Check: printenvOpts.Check}
	m["timeout"] = shell.Tool{Run: runTimeout, Check: timeoutOpts.Check}
	m["date"] = shell.Tool{Run: runDate, Check: dateCheck}
	m["expr"] = shell.Tool{Run: runExpr, Check: trueCheck}
	m["base64"] = shell.Tool{Run: runBase64, Check: base64Opts.Check}
	for name := range hashAlgos {
		m[name] = shell.Tool{Run: runHashsum, Check: hashOpts.Check}
	}
	m["tac"] = shell.Tool{Run: runTac, Check: tacCheck}
	m["rev"] = shell.Tool{Run: runRev}
	m["nl"] = shell.Tool{Run: runNl, Check: nlOpts.Check}
	m["paste"] = shell.Tool{Run: runPaste, Check: pasteOpts.Check}
	m["fold"] = shell.Tool{Run: runFold, Check: func(a []string) error { return foldOpts.Check(foldObsolete(a)) }}
	m["expand"] = shell.Tool{Run: runExpand, Check: func(a []string) error { return expandOpts.Check(expandObsolete(a)) }}
	m["unexpand"] = shell.Tool{Run: runExpand, Check: func(a []string) error { return unexpandOpts.Check(expandObsolete(a)) }}
	m["comm"] = shell.Tool{Run: runComm, Check: commOpts.Check}
	m["join"] = shell.Tool{Run: runJoin, Check: joinOpts.Check}
	m["column"] = shell.Tool{Run: runColumn, Check: txCheck(columnOpts, columnUnimpl...)}
	m["split"] = shell.Tool{Run: runSplit, Check: txCheck(splitOpts, "filter")}
	m["od"] = shell.Tool{Run: runOd, Check: txCheck(odOpts, odUnimpl...)}
	m["xxd"] = shell.Tool{Run: runXxd, Check: xxdCheck}
	m["hexdump"] = shell.Tool{Run: runHexdump, Check: txCheck(hexdumpOpts, hexdumpUnimpl...)}
	m["csplit"] = shell.Tool{Run: runCsplit, Check: txCheck(csplitOpts, csplitUnimpl...)}
	m["wc"] = shell.Tool{Run: runWc, Check: wcCheck}
}
