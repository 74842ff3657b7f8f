package e2b

import "rung.dev/rung"

// onTimeoutOf is what create's lifecycle fields make the sandbox's
// timeout do. E2B's auto-pause (autoPause) pauses the sandbox when its
// timeout runs out; rung offers it as its pause is offered (pause.go):
// the controller's TTL stops the container instead of deleting the
// sandbox and marks it paused (rung.Expiry with pausedLabel), files kept,
// processes not, and connect resumes it, starting the timeout again (and
// with it the next auto-pause). What needs memory is not provided and is
// refused with the reason rather than turned into something else: an
// auto-pause that keeps memory (autoPauseMemory, true unless false) is
// 503 unavailable, and auto-resume on traffic, which E2B allows only
// with a memory snapshot, 503 as well; autoResume with a filesystem-only
// auto-pause or without auto-pause is 400, as E2B answers.
func onTimeoutOf(in createIn) (rung.Expiry, error) {
	pause := in.AutoPause != nil && *in.AutoPause
	memory := in.AutoPauseMemory == nil || *in.AutoPauseMemory
	resume := in.AutoResume != nil && in.AutoResume.Enabled
	switch {
	case resume && !pause:
		return rung.Expiry{}, rung.Errorf(rung.ErrInvalid, "autoResume needs autoPause")
	case resume && !memory:
		return rung.Expiry{}, rung.Errorf(rung.ErrInvalid,
			"autoResume cannot be combined with autoPauseMemory false: a filesystem-only pause is resumed by connect")
	case resume:
		return rung.Expiry{}, rung.Errorf(rung.ErrUnavailable,
			"auto-resume on traffic is not available on this server: it needs a memory snapshot, which rung cannot take "+
				"(see pause); autoPause with autoPauseMemory false pauses at the timeout, keeping the files, and connect resumes it")
	case pause && memory:
		return rung.Expiry{}, rung.Errorf(rung.ErrUnavailable,
			"auto-pause that keeps memory is not available on this server (memory checkpoints are not provided): "+
				"set autoPauseMemory false (the SDK's lifecycle.onTimeout {action: 'pause', keepMemory: false}) to pause at the timeout "+
				"keeping the files, not the processes")
	case pause:
		return rung.Expiry{Stop: true, Labels: map[string]string{pausedLabel: "true"}}, nil
	}
	return rung.Expiry{}, nil
}
