package broker

// OnFetchParked makes s call f each time a fetch starts its long poll, so a
// test knows the fetch waits before it produces what should wake it.
func OnFetchParked(s *Server, f func()) { s.fetchParked.Store(&f) }

// PreviousEpoch is the broker epoch s registers as its last clean
// shutdown's, -1 after one that was not.
func PreviousEpoch(s *Server) int64 { return s.life.previous }
