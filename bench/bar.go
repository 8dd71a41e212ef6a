package bench

// Bar makes a progress bar for a long phase: it returns a callback that
// sets how far the phase got, and one to call when it ends (see
// bench/progress for one that draws).
type Bar func(what string, total int64) (progress func(int64), finish func())

// NoBar draws nothing.
func NoBar(string, int64) (func(int64), func()) { return nil, func() {} }
