package awk

import (
	"strings"
)

// setRecord makes s the current record; fields are split lazily.
func (in *interp) setRecord(s string) {
	in.record = s
	in.splitDone = false
	in.recFS = in.fs
}

func (in *interp) getRecord() string { return in.record }

// splitRecord splits $0 into fields with FS, once per record.
func (in *interp) splitRecord() {
	if in.splitDone {
		return
	}
	in.splitDone = true
	in.fields = in.fields[:1]
	in.fields = in.splitFS(in.record, in.recFS, in.rs == "", in.fields)
	in.nf = len(in.fields) - 1
	in.globals[vNF].v = num(float64(in.nf))
}

// splitFS appends the fields of s split by fs to out as strnums.
// Fields are left as kMaybe; [interp.field] decides their type on use.
func (in *interp) splitFS(s, fs string, paragraph bool, out []value) []value {
	add := func(f string) { out = append(out, value{k: kMaybe, s: f}) }
	if s == "" {
		return out
	}
	switch {
	case fs == " ":
		i := 0
		for {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
				i++
			}
			if i >= len(s) {
				return out
			}
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' {
				j++
			}
			add(s[i:j])
			i = j
		}
	case len(fs) == 1 && fs != "\\" && !paragraph:
		// a single character other than space separates literally
		for {
			j := strings.IndexByte(s, fs[0])
			if j < 0 {
				add(s)
				return out
			}
			add(s[:j])
			s = s[j+1:]
		}
	case fs == "":
		for i := 0; i < len(s); i++ {
			add(s[i : i+1])
		}
		return out
	}
	src := fs
	if len(fs) == 1 {
		src = regexQuote(fs)
	}
	re, err := in.rc.get(src)
	if err != nil {
		in.fatalf("regular expression compile failed (%s)\n%s", err, fs)
	}
	pos := 0
	for _, loc := range re.FindAllStringIndex(s, -1) {
		if loc[1] == loc[0] {
			continue // an empty match separates nothing
		}
		add(s[pos:loc[0]])
		pos = loc[1]
	}
	add(s[pos:])
	return out
}

func regexQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`\.[]()*+?^$|{}`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// field returns $i.
func (in *interp) field(i int) value {
	if i == 0 {
		return strnum(in.record)
	}
	in.splitRecord()
	if i > in.nf {
		return str("") // mawk: $5 == 0 is false when NF < 5
	}
	if in.fields[i].k == kMaybe {
		in.fields[i] = strnum(in.fields[i].s)
	}
	return in.fields[i]
}

// setField assigns $i = s (v is the value assigned, kept for its type).
func (in *interp) setField(i int, s string, v value) {
	if i == 0 {
		in.setRecord(s)
		return
	}
	in.splitRecord()
	for in.nf < i {
		in.fields = append(in.fields, str(""))
		in.nf++
	}
	if v.k == kNum {
		v = value{k: kStrNum, s: s, n: v.n}
	} else if v.k == kUninit {
		v = value{}
	} else {
		v = str(s)
	}
	in.fields[i] = v
	in.globals[vNF].v = num(float64(in.nf))
	in.rebuild()
}

// rebuild joins the fields with OFS into $0.
func (in *interp) rebuild() {
	var b strings.Builder
	for i := 1; i <= in.nf; i++ {
		if i > 1 {
			b.WriteString(in.ofs)
		}
		b.WriteString(in.toStr(in.fields[i]))
	}
	in.record = b.String()
}

// setNF handles an assignment to NF.
func (in *interp) setNF() {
	n := toInt(toNum(in.globals[vNF].v))
	in.splitRecord()
	in.globals[vNF].v = num(float64(n))
	if n < 0 {
		in.fatalf("NF set to negative value")
	}
	for in.nf < n {
		in.fields = append(in.fields, str(""))
		in.nf++
	}
	in.nf = n
	in.fields = in.fields[:n+1]
	in.rebuild()
}

// setSpecial reacts to an assignment to special variable idx.
func (in *interp) setSpecial(idx int) {
	v := in.globals[idx].v
	switch idx {
	case vNF:
		in.setNF()
	case vFS:
		in.fs = in.toStr(v)
	case vOFS:
		in.ofs = in.toStr(v)
	case vORS:
		in.ors = in.toStr(v)
	case vRS:
		in.rs = in.toStr(v)
	case vSUBSEP:
		in.subsep = in.toStr(v)
	case vCONVFMT:
		in.convfmt = in.toStr(v)
	case vOFMT:
		in.ofmt = in.toStr(v)
	}
}
