package image

// SetLoginOpenHook sets a function readLoginFile runs between its check
// of a file and its open, for a test to change the file there; nil
// removes it.
func SetLoginOpenHook(f func(abs string)) { testHookLoginOpen = f }
