package image

import "context"

// BasePackages are installed on top of Debian's minbase in the built-in
// "base" image, the daemon's default: the tools coding agents run, so
// that a first command finds them (issue 11). Locale C.UTF-8 needs no
// package: Debian 12's libc-bin ships it.
var BasePackages = []string{
	"bash", "coreutils", "findutils", "grep", "sed", "gawk",
	"python3", "python3-pip", "python3-venv", "nodejs", "npm",
	"git", "curl", "wget", "ca-certificates", "build-essential",
	"jq", "ripgrep", "zstd", "xz-utils", "unzip", "zip",
	"procps", "less", "file", "tree", "openssh-client", "sudo",
	"bsdextrautils", // column, hexdump, col, look: util-linux's, which Debian splits out of minbase
}

// BuildBase builds the built-in "base" image: Debian 12 (bookworm) from
// debootstrap with [BasePackages] and the unprivileged [DefaultUser],
// who commands run as by default. It takes minutes (about five on two
// cores, most of it downloading); progress is as for [Store.BuildDebian].
func (s *Store) BuildBase(ctx context.Context, progress func(string)) (Image, error) {
	return s.BuildDebian(ctx, DebianConfig{Name: "base", Packages: BasePackages, User: DefaultUser}, progress)
}
