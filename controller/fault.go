package controller

// fault calls Config.Fault at a named step of a multi-step operation
// (snapshot, fork, rollback, import, a network update), so that crash
// tests can end the daemon exactly there (`rung serve` kills itself with
// SIGKILL at the step $RUNG_FAULT names). Without a Fault it does
// nothing.
func (c *Controller) fault(point string) {
	if c.cfg.Fault != nil {
		c.cfg.Fault(point)
	}
}
