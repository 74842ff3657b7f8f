package rung

import (
	"errors"
	"fmt"
)

// Error classes. Every error rung returns to a caller wraps one of these
// (or is unclassified, which the API reports as "internal"). Test with
// errors.Is, never by comparing strings. The wire codes are API: see [Code].
var (
	ErrInvalid         = errors.New("invalid argument")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrPermission      = errors.New("permission denied")
	ErrNotFound        = errors.New("not found")
	ErrExists          = errors.New("already exists")
	ErrConflict        = errors.New("conflict")
	ErrLimit           = errors.New("limit exceeded")
	ErrTooLarge        = errors.New("too large")
	ErrUnavailable     = errors.New("unavailable")
	ErrTimeout         = errors.New("timeout")
)

// Wire codes, one per error class. Never rename one.
const (
	CodeInvalid         = "invalid_argument"
	CodeUnauthenticated = "unauthenticated"
	CodePermission      = "permission_denied"
	CodeNotFound        = "not_found"
	CodeExists          = "already_exists"
	CodeConflict        = "conflict"
	CodeLimit           = "limit_exceeded"
	CodeTooLarge        = "too_large"
	CodeUnavailable     = "unavailable"
	CodeTimeout         = "timeout"
	CodeInternal        = "internal"
)

var classes = []struct {
	err  error
	code string
}{
	{ErrInvalid, CodeInvalid},
	{ErrUnauthenticated, CodeUnauthenticated},
	{ErrPermission, CodePermission},
	{ErrNotFound, CodeNotFound},
	{ErrExists, CodeExists},
	{ErrConflict, CodeConflict},
	{ErrLimit, CodeLimit},
	{ErrTooLarge, CodeTooLarge},
	{ErrUnavailable, CodeUnavailable},
	{ErrTimeout, CodeTimeout},
}

// Code returns the wire code of err's class, or [CodeInternal] when err
// wraps no class. Code(nil) is "".
func Code(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return CodeInternal
}

// ClassOf returns the class sentinel for a wire code, or nil for an
// unknown or internal code. The client uses it to turn a response back
// into an error that errors.Is recognises.
func ClassOf(code string) error {
	for _, c := range classes {
		if c.code == code {
			return c.err
		}
	}
	return nil
}

// Limit names a rung limit, as [LimitError.Limit] and [ExecResult.Limit]
// report it. Its values are API (exec results, the "limit" of an
// exec.ended journal entry, error messages): one is never renamed.
type Limit string

// The limits whose names more than one package writes or compares. The
// others ("tar_entries", "concurrent_execs_per_tenant", the isolate
// interpreter's "commands" and "depth", ...) are written only where they
// are enforced.
const (
	LimitWallTime          Limit = "wall_time"           // an exec's wall time: it ends with [ExitReasonTimeout]
	LimitOutputBytes       Limit = "output_bytes"        // an exec's output: it ends with [ExitReasonOutputLimit]
	LimitMemoryBytes       Limit = "memory_bytes"        // an isolate exec's memory budget
	LimitDaemonMemoryBytes Limit = "daemon_memory_bytes" // the memory the daemon's isolate execs share
	LimitDiskBytes         Limit = "disk_bytes"          // a sandbox's disk quota
	LimitFileBytes         Limit = "file_bytes"          // one file the file API writes
	LimitSnapshotBytes     Limit = "snapshot_bytes"      // the bytes of a tenant's snapshots
)

// LimitError reports that a named limit was reached. It unwraps to
// [ErrLimit], or to [ErrTooLarge] when TooLarge is set (a single request
// or object bigger than allowed, as opposed to a rate or a count).
type LimitError struct {
	Limit    Limit // what was limited: [LimitDiskBytes], "concurrent_execs_per_tenant", ...
	Max      int64 // the configured maximum, in the limit's unit
	TooLarge bool
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("limit %s exceeded (max %d)", e.Limit, e.Max)
}

// Unwrap returns the error class.
func (e *LimitError) Unwrap() error {
	if e.TooLarge {
		return ErrTooLarge
	}
	return ErrLimit
}

// Errorf formats an error wrapping class, so that errors.Is(err, class)
// holds and the message reads as format says. The message is meant for
// the caller: it must not carry host paths or secrets.
func Errorf(class error, format string, args ...any) error {
	return &classError{class: class, msg: fmt.Sprintf(format, args...)}
}

type classError struct {
	class error
	msg   string
}

func (e *classError) Error() string { return e.msg }
func (e *classError) Unwrap() error { return e.class }
