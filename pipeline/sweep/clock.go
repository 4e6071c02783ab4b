package sweep

import "time"

// SetClock makes now the sweeper's time (time.Now by default), for the
// demo's faster clock (internal/democlock). Call it before Run: sweeps
// read it unguarded.
func (s *Sweeper) SetClock(now func() time.Time) {
	if now != nil {
		s.now = now
	}
}
