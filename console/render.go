package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// templates holds each page's template, each a clone of the layout.
type templates struct {
	pages map[string]*template.Template
}

func parseTemplates() (*templates, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	t := &templates{pages: map[string]*template.Template{}}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		c, err := layout.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := c.ParseFS(templateFS, n); err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		t.pages[n[len("templates/"):len(n)-len(".html")]] = c
	}
	return t, nil
}

// funcs are the template helpers. None returns template.HTML but chart
// drawing, whose SVG escapes every text it holds (console/chart).
var funcs = template.FuncMap{
	"digits": func(n uint64) string { return strconv.FormatUint(n, 10) },
	// count writes a number people read: "32,260".
	"count":     traffic.FormatCount,
	"visitors":  visitorsShown,
	"noKeys":    func() string { return noKeys },
	"heldShort": heldShort,
	"bar1000":   func(v float64) string { return strconv.FormatFloat(min(max(v, 0), barWidth), 'f', 1, 64) },
	"pct": func(v float64) string {
		return strconv.FormatFloat(v, 'f', 0, 64) + "%"
	},
	"ratio": formatRatio,
	"bar":   func(pct float64) string { return strconv.FormatFloat(min(max(pct, 0), 100), 'f', 1, 64) },
	"query": func(kv ...string) template.URL {
		// Values are query-escaped here; html/template escapes the
		// attribute around them.
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		return template.URL(v.Encode())
	},
}

// view is what the layout gets.
type view struct {
	Title string
	Nav   string
	User  Principal
	Auth  bool // logins are on: show who is logged in and a logout button
	CSRF  string
	Zone  string
	Flash string
	Data  any
}

// render writes a page, or its data as JSON on the API.
func (s *frame) render(w http.ResponseWriter, r *http.Request, page, title string, data any) {
	if isAPI(r) {
		writeJSON(w, http.StatusOK, data)
		return
	}
	s.renderStatus(w, r, http.StatusOK, page, title, data)
}

func (s *frame) renderStatus(w http.ResponseWriter, r *http.Request, status int, page, title string, data any) {
	t, ok := s.tmpl.pages[page]
	if !ok {
		http.Error(w, "no template "+page, http.StatusInternalServerError)
		return
	}
	p, _ := principalOf(r.Context())
	v := view{Title: title, Nav: page, User: p, Auth: s.cfg.Load().Auth != AuthNone,
		CSRF: s.auth.csrfToken(w, r, p.session), Zone: s.zone.String(), Flash: s.auth.takeFlash(w, r, p.session), Data: data}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		s.deps.Logger.Error("render failed", "page", page, "err", err)
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers an error: JSON on the API, a page otherwise.
func (s *frame) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if isAPI(r) {
		writeJSON(w, status, map[string]string{"error": msg})
		return
	}
	s.renderStatus(w, r, status, "error", http.StatusText(status), errorPage{Status: status, Message: msg})
}

type errorPage struct {
	Status  int
	Message string
}

// Forbidden is for the template: the 403 page carries a test id.
func (e errorPage) Forbidden() bool { return e.Status == http.StatusForbidden }

// failErr logs a read that failed and answers 500 without its details,
// which may name hosts.
func (s *frame) failErr(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.deps.Logger.Error("console read failed", "what", what, "path", r.URL.Path, "err", err)
	s.fail(w, r, http.StatusInternalServerError, what+" failed; the console's log says why")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// timeIn formats t for display in the console's zone.
func (s *frame) timeIn(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(s.zone).Format("2006-01-02 15:04:05")
}

// formatRatio writes a ratio one way at every size, "3.0×" and "52.0×"
// (not "52×" beside "3.0×").
func formatRatio(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64) + "×"
}

// ratioShown is a page's views against its normal as the live view
// shows it: "new" when the normal shows as 0 (no sealed days, or under
// half a view an hour), where a ratio would only be the hour's views.
func ratioShown(ratio, normal float64) string {
	if normal < 0.5 {
		return "new"
	}
	return formatRatio(ratio)
}
