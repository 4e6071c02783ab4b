package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

type silencesView struct {
	Silences  []silenceView `json:"silences"`
	Reachable bool          `json:"reachable"`
}

type silenceView struct {
	silence.Silence
	Active bool   `json:"active"`
	Starts string `json:"-"`
	Ends   string `json:"-"`
}

// maxSilenceFor bounds a silence made in the console: one forgotten for
// a year silences a year.
const maxSilenceFor = 30 * 24 * time.Hour

// silencesPage lists the silences, newest end first, with forms to add
// one and expire each (operators).
// silencePages are the silences: listed, added and expired.
type silencePages struct{ *frame }

func (s *silencePages) silencesPage(w http.ResponseWriter, r *http.Request) {
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

// silenceAdd silences crossings matching site, rule and page (a glob)
// for a duration, in the caller's name.
func (s *silencePages) silenceAdd(w http.ResponseWriter, r *http.Request) {
	p, ok := s.change(w, r, s.deps.Silences != nil)
	if !ok {
		return
	}
	d, err := time.ParseDuration(r.FormValue("for"))
	if err != nil || d <= 0 || d > maxSilenceFor {
		s.fail(w, r, http.StatusBadRequest, "for: a duration up to 720h, e.g. 2h")
		return
	}
	now := s.deps.Now()
	sl, err := s.deps.Silences.Add(r.Context(), silence.Silence{
		Match:    crossing.Match{Site: r.FormValue("site"), Rule: r.FormValue("rule"), Page: r.FormValue("page")},
		StartsAt: now, EndsAt: now.Add(d), Author: p.Name, Comment: r.FormValue("comment"),
	}, now)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "silence not added: "+err.Error())
		return
	}
	s.deps.Logger.Info("silence added", "id", sl.ID, "user", p.Name, "ends", sl.EndsAt)
	s.done(w, r, "/silences", sl, fmt.Sprintf("Silence %s added until %s.", sl.ID, s.timeIn(sl.EndsAt)))
}

func (s *silencePages) silenceExpire(w http.ResponseWriter, r *http.Request) {
	p, ok := s.change(w, r, s.deps.Silences != nil)
	if !ok {
		return
	}
	sl, err := s.deps.Silences.Expire(r.Context(), r.FormValue("id"), s.deps.Now())
	if err != nil {
		s.fail(w, r, http.StatusConflict, "silence not expired: "+err.Error())
		return
	}
	s.deps.Logger.Info("silence expired", "id", sl.ID, "user", p.Name)
	s.done(w, r, "/silences", sl, "Silence "+sl.ID+" expired.")
}
