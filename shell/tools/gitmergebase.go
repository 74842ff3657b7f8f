package tools

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git merge-base A B" and "git merge-base
// --is-ancestor A B". More than two commits (git's octopus reading) and
// histories with several best common ancestors (git picks one by its own
// walk order) are refused.

var gitMergeBaseOpts = NewOptions("is-ancestor", "a,all")

func gitMergeBase(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	isAnc := false
	for _, o := range opts {
		if o.Key == "is-ancestor" {
			isAnc = true
		}
	}
	if len(args) != 2 {
		return g.c.Fail("git merge-base with other than two commits")
	}
	var hs [2]plumbing.Hash
	for i, a := range args {
		h, ok := g.resolveRev(a)
		if !ok {
			return g.fatal("Not a valid object name %s", a)
		}
		if _, err := object.GetCommit(g.st, h); err != nil {
			return g.c.Fail("git merge-base of a non-commit " + a)
		}
		hs[i] = h
	}
	ancB, err := g.ancestors(ctx, []plumbing.Hash{hs[1]})
	if err != nil {
		return g.fatal("%v", err)
	}
	if isAnc {
		if ancB[hs[0]] {
			return 0
		}
		return 1
	}
	best, err := g.mergeBases(ctx, hs[0], hs[1])
	if err != nil {
		return g.fatal("%v", err)
	}
	if len(best) == 0 {
		return 1
	}
	if len(best) != 1 {
		return g.c.Fail("git merge-base with several best common ancestors (criss-cross history)")
	}
	fmt.Fprintln(g.c.Stdout, best[0].String())
	return 0
}

// ancestors returns every commit reachable from starts, starts included.
func (g *gitCtx) ancestors(ctx context.Context, starts []plumbing.Hash) (map[plumbing.Hash]bool, error) {
	return g.walkAncestors(ctx, starts, nil)
}

// walkAncestors is ancestors calling visit, when set, with each commit
// it reaches; an error from visit ends the walk.
func (g *gitCtx) walkAncestors(ctx context.Context, starts []plumbing.Hash, visit func(*object.Commit) error) (map[plumbing.Hash]bool, error) {
	seen := map[plumbing.Hash]bool{}
	stack := append([]plumbing.Hash(nil), starts...)
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		cm, err := object.GetCommit(g.st, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", h, err)
		}
		if visit != nil {
			if err := visit(cm); err != nil {
				return nil, err
			}
		}
		stack = append(stack, cm.ParentHashes...)
	}
	return seen, nil
}

// mergeBases returns the best common ancestors of a and b: those no other
// common ancestor reaches.
func (g *gitCtx) mergeBases(ctx context.Context, a, b plumbing.Hash) ([]plumbing.Hash, error) {
	ancA, err := g.ancestors(ctx, []plumbing.Hash{a})
	if err != nil {
		return nil, err
	}
	ancB, err := g.ancestors(ctx, []plumbing.Hash{b})
	if err != nil {
		return nil, err
	}
	var common []plumbing.Hash
	for h := range ancA {
		if ancB[h] {
			common = append(common, h)
		}
	}
	// Walk from the parents of all of them.
	var starts []plumbing.Hash
	for _, h := range common {
		cm, err := object.GetCommit(g.st, h)
		if err != nil {
			return nil, err
		}
		starts = append(starts, cm.ParentHashes...)
	}
	below, err := g.ancestors(ctx, starts)
	if err != nil {
		return nil, err
	}
	var best []plumbing.Hash
	for _, h := range common {
		if !below[h] {
			best = append(best, h)
		}
	}
	return best, nil
}
