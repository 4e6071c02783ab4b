package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

type pipelineView struct {
	At        time.Time       `json:"at"`
	NATS      *PipelineState  `json:"nats"`
	Store     Freshness       `json:"clickhouse"`
	Lags      []lagView       `json:"lags"`
	Files     []fileView      `json:"files"`
	Consumers []ConsumerState `json:"consumers"`
	Streams   []StreamState   `json:"streams"`
	// Operator answers the operator's questions (pipeline_view.go).
	Operator operatorView `json:"operator"`
}

// lagView is one headline figure.
type lagView struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds,omitempty"`
	Value   string  `json:"value"`
	Meaning string  `json:"meaning"`
}

type fileView struct {
	FileState
	Lag   string `json:"lag"`
	Shown string `json:"-"`
}

// pipelinePages are the streams, consumers, files and sweeps.
type pipelinePages struct{ *frame }

func (s *pipelinePages) pipelinePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := s.deps.Now()
	v := pipelineView{At: now, Lags: []lagView{}, Files: []fileView{}, Consumers: []ConsumerState{}, Streams: []StreamState{}}
	f, err := s.deps.Store.Freshness(ctx)
	if err != nil {
		s.failErr(w, r, "reading ClickHouse's freshness", err)
		return
	}
	v.Store = f
	// Freshness from the newest hit's own second: the newest minute's
	// start read up to 60 s old with the data fresh.
	v.Lags = append(v.Lags, age("newest hit in ClickHouse", now, f.LastHit, "the age of the newest loaded hit (by its log time): how far the counts the sweeper reads lag behind now, tail, NATS and load together"))
	if s.deps.Pipeline != nil {
		ps, err := s.deps.Pipeline.Pipeline(ctx)
		if err != nil {
			s.failErr(w, r, "reading NATS", err)
			return
		}
		v.NATS = &ps
		v.Consumers = append(v.Consumers, ps.Consumers...)
		v.Streams = append(v.Streams, ps.Streams...)
		v.Lags = append(v.Lags, age("sweep lag", now, ps.SweptTo, "since the time the last complete sweep evaluated"))
		var jobs, pending uint64
		for _, c := range ps.Consumers {
			// Stream names are <PREFIX>_JOBS and <PREFIX>_HITS (broker/bus).
			if strings.HasSuffix(c.Stream, "_JOBS") {
				jobs += c.Pending + uint64(c.AckPending)
			}
			if strings.HasSuffix(c.Stream, "_HITS") {
				pending += c.Pending
			}
		}
		v.Lags = append(v.Lags,
			lagView{Name: "loader pending", Value: itoa(pending), Meaning: "hit batches in JetStream no loader has taken yet"},
			lagView{Name: "queue depth", Value: itoa(jobs), Meaning: "notification jobs waiting or being worked on"},
			lagView{Name: "worker locks held", Value: itoa(uint64(ps.Locks)), Meaning: "pages a worker holds the lease of now"})
		// Heartbeats, sweep records and JetStream's messages carry the
		// wall clock's times, whatever clock the counts are read by (the
		// demo's runs faster): their ages are the wall clock's.
		wall := time.Now()
		v.Operator = s.operatorAnswers(ps, wall)
		for _, fs := range ps.Files {
			v.Files = append(v.Files, fileView{FileState: fs, Lag: wall.Sub(fs.LastAt).Round(time.Second).String(), Shown: s.timeIn(fs.LastAt)})
		}
	}
	s.render(w, r, "pipeline", "Pipeline", v)
}

func age(name string, now, t time.Time, meaning string) lagView {
	if t.IsZero() {
		return lagView{Name: name, Value: "never", Meaning: meaning}
	}
	d := max(now.Sub(t), 0) // a log clock a little ahead reads 0s, not a negative age
	return lagView{Name: name, Seconds: d.Seconds(), Value: d.Round(time.Second).String(), Meaning: meaning}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
