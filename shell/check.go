package shell

import "errors"

// Check reports, without running anything, whether script can run here
// faithfully: nil, or an error wrapping [ErrUnsupported] that names the
// reason (unknown command, unsupported flag, a path outside /workspace
// and /tmp, a feature the interpreter lacks). A syntax error wraps
// rung.ErrInvalid.
func (s *Shell) Check(script string) error {
	return errors.New("not written yet")
}
