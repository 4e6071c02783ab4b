package silence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// APIPrefix is where API's routes live.
const APIPrefix = "/api/v1/silences"

// API is the silences' HTTP API (JSON), served by the worker on
// its admin listener and meant for the console to mount as it is:
//
//	GET    /api/v1/silences            active and pending silences; ?all=1 adds ended ones
//	POST   /api/v1/silences            create: {"match": {...}, "starts_at", "ends_at" or "duration", "author", "comment"}
//	GET    /api/v1/silences/{id}       one silence
//	POST   /api/v1/silences/{id}/expire  end it now
//
// Changes must be sent as Content-Type: application/json, from no other
// site's page (guardChange), and a silence lasts at most MaxFor.
// It has no authentication of its own: whoever reaches the listener may
// silence. Keep worker.listen on loopback, or put it behind a proxy that
// authenticates. now is the clock (nil: time.Now).
func API(s *Store, now func() time.Time) http.Handler {
	if now == nil {
		now = time.Now
	}
	a := &api{s: s, now: now}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+APIPrefix, a.list)
	mux.HandleFunc("POST "+APIPrefix, guardChange(a.create))
	mux.HandleFunc("GET "+APIPrefix+"/{id}", a.get)
	mux.HandleFunc("POST "+APIPrefix+"/{id}/expire", guardChange(a.expire))
	return mux
}

type api struct {
	s   *Store
	now func() time.Time
}

// Request is the body of a create request. Give ends_at, or
// duration ("2h") counted from starts_at (default: now).
type Request struct {
	Match    crossing.Match `json:"match"`
	StartsAt time.Time      `json:"starts_at,omitzero"`
	EndsAt   time.Time      `json:"ends_at,omitzero"`
	Duration string         `json:"duration,omitempty"`
	Author   string         `json:"author"`
	Comment  string         `json:"comment,omitempty"`
}

// Silence turns the request into a silence to add, at now.
func (r Request) Silence(now time.Time) (Silence, error) {
	s := Silence{Match: r.Match, StartsAt: r.StartsAt, EndsAt: r.EndsAt, Author: r.Author, Comment: r.Comment}
	if s.StartsAt.IsZero() {
		s.StartsAt = now
	}
	switch {
	case r.Duration != "" && !r.EndsAt.IsZero():
		return s, errors.New("give ends_at or duration, not both")
	case r.Duration != "":
		d, err := time.ParseDuration(r.Duration)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("duration: want a positive duration like \"2h\", got %q", r.Duration)
		}
		s.EndsAt = s.StartsAt.Add(d)
	}
	return s, nil
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	all, now := r.URL.Query().Get("all") == "1", a.now()
	ss, err := a.s.List(r.Context())
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err)
		return
	}
	out := []Silence{}
	for _, s := range ss {
		if all || s.EndsAt.After(now) {
			out = append(out, s)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	var req Request
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, fmt.Errorf("decode silence: %w", err))
		return
	}
	now := a.now()
	s, err := req.Silence(now)
	if err == nil {
		s, err = a.s.Add(r.Context(), s, now)
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	w.Header().Set("Location", APIPrefix+"/"+s.ID)
	writeJSON(w, http.StatusCreated, s)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	ss, err := a.s.List(r.Context())
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err)
		return
	}
	for _, s := range ss {
		if s.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, s)
			return
		}
	}
	httpError(w, http.StatusNotFound, ErrNotFound)
}

func (a *api) expire(w http.ResponseWriter, r *http.Request) {
	s, err := a.s.Expire(r.Context(), r.PathValue("id"), a.now())
	switch {
	case errors.Is(err, ErrNotFound):
		httpError(w, http.StatusNotFound, err)
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, err)
	default:
		writeJSON(w, http.StatusOK, s)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": strings.ReplaceAll(err.Error(), "\n", "; ")})
}
