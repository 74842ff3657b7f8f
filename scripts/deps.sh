#!/usr/bin/env bash
# Installs what rung and its tests need on Debian 12, idempotently: the
# real parts (btrfs, OCI runtimes, busybox for the lite image, debootstrap)
# and the GNU tools the isolate tier is tested against.
set -euo pipefail

need=()
want() { # want COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 || need+=("$2")
}
want mkfs.btrfs btrfs-progs
want runc runc
want crun crun
want runsc runsc
want busybox busybox-static
want debootstrap debootstrap
want bash bash
want git git
want jq jq
want tree tree
want file file
want column bsdextrautils
want patch patch
want diff diffutils
want find findutils
want mawk mawk
want gawk gawk
want xxd xxd
want unshare util-linux
want losetup mount
want ip iproute2 # the network tests' upstream namespaces
want node nodejs # the E2B SDK's end-to-end test
want npm npm
want chromium chromium # headless, drives the web dashboard in TestDashboard

if ((${#need[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "rung: missing packages ${need[*]}; run as root to install them" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
modprobe btrfs 2>/dev/null || true
modprobe loop 2>/dev/null || true
modprobe overlay 2>/dev/null || true
# Each sandbox file view keeps one inotify instance for its stat cache;
# the default of 128 per user is far below the sandboxes one daemon serves.
if [ "$(id -u)" = 0 ] && [ "$(sysctl -n fs.inotify.max_user_instances 2>/dev/null || echo 0)" -lt 65536 ]; then
	sysctl -qw fs.inotify.max_user_instances=65536 || true
fi
