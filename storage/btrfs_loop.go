package storage

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Loop devices and mounts for the pool image. The loop device is
// configured with LO_FLAGS_AUTOCLEAR, so the kernel detaches it when its
// last user goes away: when the pool is unmounted, or when the process
// that attached it dies before mounting. That is what keeps a kill -9 at
// any moment from leaking a loop device.

const (
	loFlagsAutoclear = 4 // LO_FLAGS_AUTOCLEAR
)

// attachLoop attaches image to a free loop device and returns the
// device's path and an open descriptor; the device detaches itself when
// that descriptor is closed and nothing else (a mount) holds it.
func attachLoop(image string) (string, int, error) {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, fmt.Errorf("open /dev/loop-control: %w", err)
	}
	defer unix.Close(ctl)
	img, err := unix.Open(image, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, fmt.Errorf("open pool image: %w", err)
	}
	defer unix.Close(img)
	// Another process may take the free device between GET_FREE and
	// CONFIGURE; the kernel then says EBUSY and we ask again.
	for range 16 {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", -1, fmt.Errorf("get free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", -1, fmt.Errorf("open %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(img)}
		cfg.Info.Flags = loFlagsAutoclear
		copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], image)
		err = unix.IoctlLoopConfigure(fd, &cfg)
		if err == unix.EBUSY {
			unix.Close(fd)
			continue
		}
		if err != nil {
			unix.Close(fd)
			return "", -1, fmt.Errorf("configure %s: %w", dev, err)
		}
		return dev, fd, nil
	}
	return "", -1, fmt.Errorf("attach loop device: %w", unix.EBUSY)
}

// loopDevicesFor returns the loop devices whose backing file is image.
func loopDevicesFor(image string) ([]string, error) {
	ents, err := os.ReadDir("/sys/block")
	if err != nil {
		return nil, err
	}
	var devs []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err != nil {
			continue // not attached
		}
		if strings.TrimSpace(string(b)) == image {
			devs = append(devs, "/dev/"+e.Name())
		}
	}
	return devs, nil
}

// waitLoopGone waits up to timeout for dev to stop being backed by image
// and reports whether it did.
func waitLoopGone(image, dev string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		devs, err := loopDevicesFor(image)
		if err != nil || !slices.Contains(devs, dev) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}

// clearLoop detaches loop device dev. If something still uses it, the
// kernel instead marks it to detach when the last user goes.
func clearLoop(dev string) error {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
}

// LoopDevices returns the loop devices (/dev/loopN) whose backing file is
// image, an absolute path. Tests use it to check that nothing leaked.
func LoopDevices(image string) ([]string, error) { return loopDevicesFor(image) }

// mountInfo is one line of /proc/self/mountinfo, reduced to what we use.
type mountInfo struct {
	target string
	fstype string
	source string
}

// findMount returns the topmost mount at target, if any.
func findMount(target string) (mountInfo, bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return mountInfo{}, false, err
	}
	defer f.Close()
	var found mountInfo
	ok := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root target options [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		if unescapeMount(fields[4]) != target {
			continue
		}
		found = mountInfo{target: target, fstype: fields[sep+1], source: unescapeMount(fields[sep+2])}
		ok = true // keep scanning: the last one is on top
	}
	return found, ok, sc.Err()
}

// unescapeMount undoes the octal escapes (\040 for space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}
