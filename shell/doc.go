// Package shell is the isolate tier: a bash interpreter written for rung on
// the mvdan.cc/sh/v3/syntax parser, whose only world is a sandbox's file
// view. Commands are [Tool] functions handed to it by its caller (the set
// lives in shell/tools); anything it cannot run faithfully it reports
// (wrapping [ErrUnsupported]) instead of faking.
package shell
