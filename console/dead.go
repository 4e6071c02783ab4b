package console

import (
	"fmt"
	"net/http"
	"strconv"
)

const (
	actRetry   = "retry"
	actDiscard = "discard"
	// deadListLimit bounds the dead letters a page lists and an "all"
	// action takes at once.
	deadListLimit = 500
)

type deadView struct {
	Letters []deadRow `json:"dead_letters"`
	// Reachable is false when the console has no NATS to read them from.
	Reachable bool `json:"reachable"`
	Limit     int  `json:"limit"`
}

type deadRow struct {
	DeadLetter
	Shown string `json:"-"`
}

// deadPages are the dead letters: listed, retried and discarded.
type deadPages struct{ *frame }

func (s *deadPages) deadPage(w http.ResponseWriter, r *http.Request) {
	v := deadView{Letters: []deadRow{}, Limit: deadListLimit}
	if s.deps.DeadLetters != nil {
		ls, err := s.deps.DeadLetters.List(r.Context(), deadListLimit)
		if err != nil {
			s.failErr(w, r, "reading the dead letters", err)
			return
		}
		for _, l := range ls {
			v.Letters = append(v.Letters, deadRow{DeadLetter: l, Shown: s.timeIn(l.At)})
		}
		v.Reachable = true
	}
	s.render(w, r, "dead", "Dead letters", v)
}

// deadAction retries or discards one dead letter (form field or query
// "seq") and records it in the history.
func (s *deadPages) deadAction(act string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.change(w, r, s.deps.DeadLetters != nil)
		if !ok {
			return
		}
		seq, err := strconv.ParseUint(r.FormValue("seq"), 10, 64)
		if err != nil || seq == 0 {
			s.fail(w, r, http.StatusBadRequest, "seq: must be a dead letter's sequence number")
			return
		}
		d, err := s.act(r, p, act, seq)
		if err != nil {
			s.deps.Logger.Warn("dead letter action failed", "action", act, "seq", seq, "user", p.Name, "err", err)
			s.fail(w, r, http.StatusConflict, fmt.Sprintf("%s of dead letter %d failed: %v", act, seq, err))
			return
		}
		s.done(w, r, "/dead", map[string]any{"action": act, "dead_letters": []DeadLetter{d}},
			fmt.Sprintf("%s: dead letter %d (%s).", act, seq, d.Kind))
	}
}

// deadAll retries or discards every dead letter listed (at most
// deadListLimit at a time).
func (s *deadPages) deadAll(act string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.change(w, r, s.deps.DeadLetters != nil)
		if !ok {
			return
		}
		ls, err := s.deps.DeadLetters.List(r.Context(), deadListLimit)
		if err != nil {
			s.failErr(w, r, "reading the dead letters", err)
			return
		}
		done := []DeadLetter{}
		var failed []string
		for _, l := range ls {
			d, err := s.act(r, p, act, l.Seq)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%d: %v", l.Seq, err))
				continue
			}
			done = append(done, d)
		}
		msg := fmt.Sprintf("%s: %d dead letters.", act, len(done))
		if len(failed) > 0 {
			msg += fmt.Sprintf(" %d failed (first: %s).", len(failed), failed[0])
		}
		s.done(w, r, "/dead", map[string]any{"action": act, "dead_letters": done, "failed": failed}, msg)
	}
}

func (s *deadPages) act(r *http.Request, p Principal, act string, seq uint64) (DeadLetter, error) {
	var (
		d   DeadLetter
		err error
	)
	if act == actRetry {
		d, err = s.deps.DeadLetters.Retry(r.Context(), seq)
	} else {
		d, err = s.deps.DeadLetters.Discard(r.Context(), seq)
	}
	if err != nil {
		return d, err
	}
	s.metrics.actions.WithLabelValues(act).Inc()
	s.deps.Logger.Info("dead letter "+act, "seq", seq, "kind", d.Kind, "key", d.Key, "receiver", d.Receiver, "user", p.Name)
	a := Action{At: s.deps.Now(), User: p.Name, Action: act, Kind: d.Kind, Seq: seq, Key: d.Key,
		Rule: d.Rule, Site: d.Site, Path: d.Path, Receiver: d.Receiver, Reason: d.Reason}
	if err := s.deps.Store.RecordAction(r.Context(), a); err != nil {
		// The action happened; only its record is missing. Say so in
		// the log rather than pretend it failed.
		s.deps.Logger.Error("dead letter action done but not recorded in the history", "action", act, "seq", seq, "err", err)
	}
	return d, nil
}

// done answers a change: JSON on the API, a redirect back to the page
// it was made on (back: "/dead", "/silences") with a message for it
// otherwise (POST, redirect, GET; the message goes in a signed cookie).
func (s *frame) done(w http.ResponseWriter, r *http.Request, back string, v any, msg string) {
	if isAPI(r) {
		writeJSON(w, http.StatusOK, v)
		return
	}
	p, _ := principalOf(r.Context())
	s.auth.setFlash(w, p.session, msg)
	http.Redirect(w, r, back, http.StatusSeeOther)
}
