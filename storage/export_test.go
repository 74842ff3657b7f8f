package storage

import "golang.org/x/sys/unix"

// SubvolIDOf returns the id of the btrfs subvolume that directory path is
// in.
func SubvolIDOf(path string) (uint64, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return subvolID(fd)
}

// QgroupDirOf returns the sysfs directory of subvolume id's level-0
// quota group.
func (p *Pool) QgroupDirOf(id uint64) string { return p.qgroupDirID(id) }
