package tail

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fileState is what the metrics say about one input between scrapes. The
// follower writes it; a scrape reads it, so the age keeps growing while
// the follower is stuck in a publish (JetStream away).
type fileState struct {
	path string
	site string       // the input's site; "": each line's virtual host
	lag  atomic.Int64 // bytes of the file past its published end
	// since is when the oldest unpublished bytes were first seen (unix
	// nanoseconds), 0 when every complete line is published. The time a
	// byte was written is not known; the time it was first seen is close
	// while ingest runs, and is start-up time for what was written while
	// ingest was stopped.
	since atomic.Int64

	// For the heartbeat (heartbeat.go): the file's size and how far it is
	// stored when last read, when a batch of it was last stored (unix
	// nanoseconds), the lines read, and whether another tailer holds it.
	size, offset atomic.Int64
	lastPublish  atomic.Int64
	lines        atomic.Int64
	standby      atomic.Bool
}

// setPosition records the file's size and how far it is stored, when a
// batch was last stored and the lines read so far.
func (s *fileState) setPosition(size, offset int64, lastPublish time.Time, lines int64) {
	if s == nil {
		return
	}
	s.size.Store(size)
	s.offset.Store(offset)
	if !lastPublish.IsZero() {
		s.lastPublish.Store(lastPublish.UnixNano())
	}
	s.lines.Store(lines)
}

func (s *fileState) setStandby(v bool) {
	if s != nil {
		s.standby.Store(v)
	}
}

func (s *fileState) setLag(n int64) {
	if s != nil {
		s.lag.Store(max(n, 0))
	}
}

func (s *fileState) unpublishedSeen(now time.Time) {
	if s != nil {
		s.since.CompareAndSwap(0, now.UnixNano())
	}
}

func (s *fileState) allPublished() {
	if s != nil {
		s.since.Store(0)
	}
}

// stateCollector exports every followed file's fileState at scrape time:
// the literal inputs' always, the glob inputs' files' while followed.
type stateCollector struct {
	states []*fileState
	more   func() []*fileState
	lag    *prometheus.Desc
	age    *prometheus.Desc
	now    func() time.Time
}

func newStateCollector(states []*fileState, more func() []*fileState) *stateCollector {
	return &stateCollector{
		states: states,
		more:   more,
		// The file label is a literal input's configured path, or the
		// path a glob input matched: bounded by the config and by
		// ingest.tail.max_files, never a path from a log line.
		lag: prometheus.NewDesc("pagewatch_ingest_tail_lag_bytes",
			"Bytes of the file being followed past the end published to JetStream (an incomplete last line included).",
			[]string{"file"}, nil),
		age: prometheus.NewDesc("pagewatch_ingest_tail_oldest_unpublished_age_seconds",
			"How long the oldest complete line not yet published has been waiting, from when it was first seen; 0 when all are published.",
			[]string{"file"}, nil),
		now: time.Now,
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.age
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	states := c.states
	if c.more != nil {
		states = append(states[:len(states):len(states)], c.more()...)
	}
	for _, s := range states {
		age := 0.0
		if since := s.since.Load(); since != 0 {
			age = max(now.Sub(time.Unix(0, since)).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(s.lag.Load()), s.path)
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age, s.path)
	}
}
