package sweep

import (
	"context"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/sweep/sweepstatus"
)

// recordSweep writes when the sweep that started at start ran, how long
// it took and how it ended to the sweep_status bucket, for the console's
// pipeline page. A failure to write is logged and the sweep goes on: it
// is a report, not a step of the sweep.
func (s *Sweeper) recordSweep(ctx context.Context, start time.Time, err error) {
	rec := sweepstatus.Sweep{Owner: s.leader.owner, Started: start, Took: time.Since(start)}
	if err != nil {
		rec.Error = err.Error()
	}
	// The sweep's own ctx may have ended (sweep_timeout); the record of
	// that is worth a moment more.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if werr := sweepstatus.Write(wctx, s.handOn.bus, rec); werr != nil {
		s.logger.Warn("recording the sweep for the console failed", "err", werr)
	}
}
