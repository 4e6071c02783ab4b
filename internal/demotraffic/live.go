package demotraffic

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pagewatch/pagewatch/internal/democlock"
)

// Live appends to log, as clock reaches their time, the lines from the
// history's end on: the live phase. Each line is written once its time
// has come on the clock (the demo's, faster than the wall's), so the
// tailer sees traffic flow as it would on a site; lines of minutes the
// clock passed while nothing ran (the backfill) are written at once.
// tick is how often it writes. Every hour on the clock, it calls hour
// with the lines written in it.
func (s *Site) Live(ctx context.Context, log string, clock democlock.Clock, tick time.Duration, hour func(at time.Time, lines int)) error {
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	minute := s.End.Truncate(time.Minute)
	var pending []Line
	for _, l := range s.Minute(minute) {
		if !l.At.Before(s.End) {
			pending = append(pending, l)
		}
	}
	hourStart, inHour := s.End.Truncate(time.Hour), 0
	t := time.NewTicker(tick)
	defer t.Stop()
	var buf []byte
	for {
		now := clock.Now()
		buf = buf[:0]
		for {
			for len(pending) > 0 && !pending[0].At.After(now) {
				if h := pending[0].At.Truncate(time.Hour); h.After(hourStart) {
					if hour != nil {
						hour(hourStart, inHour)
					}
					hourStart, inHour = h, 0
				}
				buf = append(buf, pending[0].Text...)
				inHour++
				pending = pending[1:]
			}
			if len(pending) > 0 || minute.Add(time.Minute).After(now) || ctx.Err() != nil {
				break
			}
			minute = minute.Add(time.Minute)
			pending = s.Minute(minute)
		}
		if len(buf) > 0 {
			if _, err := f.Write(buf); err != nil {
				return fmt.Errorf("write %s: %w", log, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
