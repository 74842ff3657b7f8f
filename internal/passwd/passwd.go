// Package passwd resolves a user, as a container's /etc/passwd and
// /etc/group describe it, to the uid, gid, supplementary groups and home
// directory a command runs with. The files are parsed as given: the
// caller reads them (from an image's layers, bounded in size), so
// nothing here touches the host's own account database.
package passwd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Account is who a command runs as.
type Account struct {
	Name   string   // the login name; "" for a bare uid the files do not list
	UID    uint32   // user id
	GID    uint32   // primary group id
	Groups []uint32 // supplementary group ids, ascending, without GID
	Home   string   // home directory; "/" when the files do not say
	Shell  string   // login shell; "" when the files do not say
}

// ErrUnknown is the error (wrapped) for a user or group the files do not
// list by that name.
var ErrUnknown = errors.New("not in the image's account files")

// Entry is one line of a passwd file.
type Entry struct {
	Name  string
	UID   uint32
	GID   uint32
	Home  string
	Shell string
}

// Group is one line of a group file.
type Group struct {
	Name    string
	GID     uint32
	Members []string
}

// ParsePasswd parses a passwd file (name:password:uid:gid:gecos:home:shell).
// Malformed lines and comments are skipped, as glibc skips them; a later
// line never replaces an earlier one of the same name, since lookups stop
// at the first.
func ParsePasswd(b []byte) []Entry {
	var out []Entry
	eachLine(b, func(f []string) {
		if len(f) < 7 || f[0] == "" {
			return
		}
		uid, err1 := parseID(f[2])
		gid, err2 := parseID(f[3])
		if err1 != nil || err2 != nil {
			return
		}
		out = append(out, Entry{Name: f[0], UID: uid, GID: gid, Home: f[5], Shell: f[6]})
	})
	return out
}

// ParseGroup parses a group file (name:password:gid:member,member).
// Malformed lines and comments are skipped.
func ParseGroup(b []byte) []Group {
	var out []Group
	eachLine(b, func(f []string) {
		if len(f) < 4 || f[0] == "" {
			return
		}
		gid, err := parseID(f[2])
		if err != nil {
			return
		}
		g := Group{Name: f[0], GID: gid}
		for _, m := range strings.Split(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" {
				g.Members = append(g.Members, m)
			}
		}
		out = append(out, g)
	})
	return out
}

func eachLine(b []byte, fn func([]string)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		fn(strings.Split(line, ":"))
	}
}

// parseID parses a uid or gid: a decimal number below 2^32-1 (-1 is
// "no id" to the kernel's chown and setresuid).
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, fmt.Errorf("bad id %q", s)
	}
	return uint32(n), nil
}

// Lookup resolves spec, in the forms a container image's User takes
// ("name", "uid", "name:group", "uid:gid", group by name or number),
// against the parsed files. A name must be listed; a bare uid that is
// not listed runs with gid 0 and home "/", as Docker runs it. Without a
// group part the primary group is the user's and the supplementary
// groups are those listing the user as a member; with one, that group
// alone. An unlisted name wraps [ErrUnknown].
func Lookup(users []Entry, groups []Group, spec string) (Account, error) {
	user, group, hasGroup := strings.Cut(spec, ":")
	if user == "" {
		return Account{}, fmt.Errorf("empty user in %q", spec)
	}
	var a Account
	if uid, err := parseID(user); err == nil {
		a = Account{UID: uid, Home: "/"}
		if i := slices.IndexFunc(users, func(e Entry) bool { return e.UID == uid }); i >= 0 {
			a = account(users[i])
		}
	} else {
		i := slices.IndexFunc(users, func(e Entry) bool { return e.Name == user })
		if i < 0 {
			return Account{}, fmt.Errorf("user %q: %w", user, ErrUnknown)
		}
		a = account(users[i])
	}
	if hasGroup {
		gid, err := lookupGroup(groups, group)
		if err != nil {
			return Account{}, err
		}
		a.GID = gid
		return a, nil
	}
	if a.Name != "" {
		for _, g := range groups {
			if g.GID != a.GID && slices.Contains(g.Members, a.Name) && !slices.Contains(a.Groups, g.GID) {
				a.Groups = append(a.Groups, g.GID)
			}
		}
		slices.Sort(a.Groups)
	}
	return a, nil
}

func account(e Entry) Account {
	home := e.Home
	if home == "" {
		home = "/"
	}
	return Account{Name: e.Name, UID: e.UID, GID: e.GID, Home: home, Shell: e.Shell}
}

func lookupGroup(groups []Group, group string) (uint32, error) {
	if gid, err := parseID(group); err == nil {
		return gid, nil
	}
	if group == "" {
		return 0, errors.New("empty group")
	}
	i := slices.IndexFunc(groups, func(g Group) bool { return g.Name == group })
	if i < 0 {
		return 0, fmt.Errorf("group %q: %w", group, ErrUnknown)
	}
	return groups[i].GID, nil
}
