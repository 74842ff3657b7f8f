package awk

// Expressions. The interpreter evaluates them with a type switch.
type expr any

type (
	numLit   struct{ v value }
	strLit   struct{ v value }
	regexLit struct {
		re  *ere
		src string
	}
	// varRef is a scalar variable: a global (local=false) or a function
	// parameter slot.
	varRef struct {
		local bool
		idx   int
		name  string
	}
	// arrRef is an array variable.
	arrRef struct {
		local bool
		idx   int
		name  string
	}
	indexExpr struct {
		arr   *arrRef
		index []expr
	}
	fieldExpr  struct{ index expr }
	assignExpr struct {
		lhs expr // *varRef, *indexExpr, *fieldExpr
		op  tok  // tAssign or an op-assign token
		rhs expr
	}
	condExpr struct{ cond, yes, no expr }
	binExpr  struct {
		op   tok // arithmetic, comparison, tAnd, tOr; tString means concatenation
		l, r expr
	}
	unaryExpr struct {
		op tok // tMinus, tPlus, tNot
		e  expr
	}
	incrExpr struct {
		lhs   expr
		pre   bool
		delta float64
	}
	matchExpr struct {
		l   expr
		re  expr // *regexLit or a dynamic expression
		neg bool
	}
	inExpr struct {
		index []expr
		arr   *arrRef
	}
	callExpr struct {
		name   string
		fn     *funcDef // resolved after parsing
		caller *funcDef // function the call is in, nil at top level
		args   []expr
		line   int
	}
	builtinExpr struct {
		name string
		args []expr
	}
	getlineExpr struct {
		kind int  // getPlain, getFile, getCmd
		src  expr // file name or command
		lhs  expr // nil: $0
	}
	groupExpr struct{ exprs []expr } // (a, b) in print's argument list
)

const (
	getPlain = iota
	getFile
	getCmd
)

// Statements.
type stmt any

type (
	printStmt struct {
		printf bool
		args   []expr
		redir  tok // 0, tGreater, tAppend, tPipe
		dest   expr
	}
	exprStmt struct{ e expr }
	ifStmt   struct {
		cond    expr
		yes, no []stmt
	}
	whileStmt struct {
		cond expr
		body []stmt
	}
	doStmt struct {
		body []stmt
		cond expr
	}
	forStmt struct {
		init stmt
		cond expr
		post stmt
		body []stmt
	}
	forInStmt struct {
		v    expr // *varRef or *indexExpr or *fieldExpr
		arr  *arrRef
		body []stmt
	}
	blockStmt    struct{ body []stmt }
	breakStmt    struct{}
	continueStmt struct{}
	nextStmt     struct{}
	nextfileStmt struct{}
	exitStmt     struct{ e expr }
	returnStmt   struct{ e expr }
	deleteStmt   struct {
		arr   *arrRef
		index []expr // nil: the whole array
	}
	getlineStmt struct{ g *getlineExpr }
)

// item is one pattern-action pair of the main loop.
type item struct {
	pattern expr // nil: always
	end     expr // non-nil: a range pattern pattern,end
	body    []stmt
	hasBody bool // false: the default action { print }
	inRange bool // range state
}

type funcDef struct {
	name    string
	params  []string
	isArray []bool // which params are used as arrays
	nlocals int
	body    []stmt
}

// program is a parsed awk program.
type program struct {
	begins  [][]stmt
	items   []*item
	ends    [][]stmt
	funcs   map[string]*funcDef
	globals map[string]int // name -> global slot
	arrays  map[string]bool
	scalars map[string][]int // global name -> lines where used as a scalar
}
