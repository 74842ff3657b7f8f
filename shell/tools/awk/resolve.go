package awk

import "fmt"

// resolve links calls to functions and decides which bare-name arguments
// are arrays passed by reference.
func (p *parser) resolve() error {
	for _, c := range p.calls {
		fd, ok := p.prog.funcs[c.name]
		if !ok {
			return &SyntaxError{Line: c.line, Msg: fmt.Sprintf("function %s never defined", c.name)}
		}
		if len(c.args) > len(fd.params) {
			return &SyntaxError{Line: c.line, Msg: fmt.Sprintf("too many arguments in call to %s", c.name)}
		}
		c.fn = fd
	}
	// Propagate array-ness through calls until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, c := range p.calls {
			for i, a := range c.args {
				v, ok := a.(*varRef)
				if !ok {
					continue
				}
				callee := c.fn.isArray[i]
				if v.local {
					caller := c.caller
					if caller != nil && caller.isArray[v.idx] != callee && callee {
						caller.isArray[v.idx], changed = true, true
					} else if caller != nil && caller.isArray[v.idx] && !callee {
						c.fn.isArray[i], changed = true, true
					}
				} else {
					if callee && !p.prog.arrays[v.name] {
						p.prog.arrays[v.name], changed = true, true
					} else if p.prog.arrays[v.name] && !callee {
						c.fn.isArray[i], changed = true, true
					}
				}
			}
		}
	}
	for _, c := range p.calls {
		for i, a := range c.args {
			if v, ok := a.(*varRef); ok && c.fn.isArray[i] {
				c.args[i] = &arrRef{local: v.local, idx: v.idx, name: v.name}
				if !v.local {
					p.unmarkScalar(v.name)
				}
			}
		}
	}
	for name, lines := range p.prog.scalars {
		if len(lines) > 0 && p.prog.arrays[name] {
			return &SyntaxError{Line: lines[0], Msg: "illegal reference to array " + name}
		}
	}
	return nil
}

// unmarkScalar forgets one scalar use of a global name that turned out
// to be an array argument.
func (p *parser) unmarkScalar(name string) {
	if l := p.prog.scalars[name]; len(l) > 0 {
		p.prog.scalars[name] = l[1:]
	}
}
