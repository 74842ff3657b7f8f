package passwd_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung/internal/passwd"
)

// What base's /etc/passwd and /etc/group look like (trimmed), with the
// malformed lines a hand-edited file can have.
const (
	passwdFile = `root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
# a comment
broken line
bad:x:notanumber:0::/:/bin/sh
user:x:1000:1000:,,,:/home/user:/bin/bash
nohome:x:1001:1001:::/bin/sh
user:x:2000:2000::/elsewhere:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
`
	groupFile = `root:x:0:
sudo:x:27:user
users:x:100:user,other
user:x:1000:
nohome:x:1001:
audio:x:29: user
bad:x:zz:user
nogroup:x:65534:
`
)

func TestLookup(t *testing.T) {
	users, groups := passwd.ParsePasswd([]byte(passwdFile)), passwd.ParseGroup([]byte(groupFile))
	tests := []struct {
		name    string
		spec    string
		want    passwd.Account
		unknown bool // the error wraps ErrUnknown
		err     bool
	}{
		{name: "root", spec: "root", want: passwd.Account{Name: "root", Home: "/root", Shell: "/bin/bash"}},
		{name: "user with supplementary groups", spec: "user", want: passwd.Account{Name: "user", UID: 1000, GID: 1000, Groups: []uint32{27, 29, 100}, Home: "/home/user", Shell: "/bin/bash"}},
		{name: "first entry of a name wins", spec: "user", want: passwd.Account{Name: "user", UID: 1000, GID: 1000, Groups: []uint32{27, 29, 100}, Home: "/home/user", Shell: "/bin/bash"}},
		{name: "listed uid", spec: "1000", want: passwd.Account{Name: "user", UID: 1000, GID: 1000, Groups: []uint32{27, 29, 100}, Home: "/home/user", Shell: "/bin/bash"}},
		{name: "unlisted uid runs as gid 0", spec: "4242", want: passwd.Account{UID: 4242, Home: "/"}},
		{name: "empty home is /", spec: "nohome", want: passwd.Account{Name: "nohome", UID: 1001, GID: 1001, Home: "/", Shell: "/bin/sh"}},
		{name: "group by name replaces the groups", spec: "user:users", want: passwd.Account{Name: "user", UID: 1000, GID: 100, Home: "/home/user", Shell: "/bin/bash"}},
		{name: "group by number", spec: "4242:4243", want: passwd.Account{UID: 4242, GID: 4243, Home: "/"}},
		{name: "unknown user", spec: "alice", unknown: true},
		{name: "unknown group", spec: "user:wheel", unknown: true},
		{name: "malformed line is not a user", spec: "bad", unknown: true},
		{name: "empty", spec: "", err: true},
		{name: "empty group", spec: "user:", err: true},
		{name: "uid -1 is not a number", spec: "4294967295", unknown: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := passwd.Lookup(users, groups, tc.spec)
			switch {
			case tc.unknown:
				if !errors.Is(err, passwd.ErrUnknown) {
					t.Fatalf("Lookup(%q) error = %v, want ErrUnknown", tc.spec, err)
				}
				return
			case tc.err:
				if err == nil || errors.Is(err, passwd.ErrUnknown) {
					t.Fatalf("Lookup(%q) error = %v, want a malformed-spec error", tc.spec, err)
				}
				return
			case err != nil:
				t.Fatalf("Lookup(%q): %v", tc.spec, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Lookup(%q) (-want +got):\n%s", tc.spec, diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	users := passwd.ParsePasswd([]byte(passwdFile))
	if len(users) != 6 {
		t.Errorf("ParsePasswd kept %d entries, want 6 (comment, short and non-numeric lines skipped): %+v", len(users), users)
	}
	groups := passwd.ParseGroup([]byte("a:x:1:u1, u2 ,,\r\nb:x:2\n"))
	want := []passwd.Group{{Name: "a", GID: 1, Members: []string{"u1", "u2"}}}
	if diff := cmp.Diff(want, groups); diff != "" {
		t.Errorf("ParseGroup (-want +got):\n%s", diff)
	}
}
