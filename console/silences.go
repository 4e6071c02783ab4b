package console

import (
	"net/http"

	"github.com/pagewatch/pagewatch/pipeline/notify"
)

type silencesView struct {
	Silences  []silenceView `json:"silences"`
	Reachable bool          `json:"reachable"`
}

type silenceView struct {
	notify.Silence
	Active bool   `json:"active"`
	Starts string `json:"-"`
	Ends   string `json:"-"`
}

// silencesPage lists the silences (create and expire them with
// `worker silence` or the worker's API, docs/receivers.md).
func (s *Server) silencesPage(w http.ResponseWriter, r *http.Request) {
	v := silencesView{Silences: []silenceView{}}
	if s.deps.Silences != nil {
		list, err := s.deps.Silences.List(r.Context())
		if err != nil {
			s.failErr(w, r, "reading the silences", err)
			return
		}
		now := s.deps.Now()
		for _, sl := range list {
			v.Silences = append(v.Silences, silenceView{Silence: sl, Active: sl.Active(now), Starts: s.timeIn(sl.StartsAt), Ends: s.timeIn(sl.EndsAt)})
		}
		v.Reachable = true
	}
	s.render(w, r, "silences", "Silences", v)
}
