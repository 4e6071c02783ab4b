package console

import (
	"context"
	"io/fs"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.route("GET /login", "login", true, s.loginPage)
	s.route("POST /login", "login", true, s.login)
	s.route("POST /logout", "logout", true, s.logout)

	dead, hist, live := &deadPages{s.frame}, &historyPages{s.frame}, &livePages{frame: s.frame, live: s.live}
	page, pipe, rls, sil := &pagePages{s.frame}, &pipelinePages{s.frame}, &rulePages{s.frame}, &silencePages{s.frame}
	both := func(method, path, name string, h http.HandlerFunc) {
		s.route(method+" "+path, name, false, h)
		s.route(method+" /api/v1"+path, name, false, h)
	}
	s.route("GET /{$}", "live", false, live.livePage)
	both("GET", "/live", "live", live.livePage)
	s.route("GET /api/v1/live/stream", "live_stream", false, live.liveStream)
	both("GET", "/history", "history", hist.historyPage)
	both("GET", "/page", "page", page.pagePage)
	both("GET", "/dead", "dead", dead.deadPage)
	both("POST", "/dead/retry", "dead_retry", dead.deadAction(actRetry))
	both("POST", "/dead/discard", "dead_discard", dead.deadAction(actDiscard))
	both("POST", "/dead/retry-all", "dead_retry", dead.deadAll(actRetry))
	both("POST", "/dead/discard-all", "dead_discard", dead.deadAll(actDiscard))
	both("GET", "/rules", "rules", rls.rulesPage)
	try := newTryPages(s.frame)
	both("GET", "/rules/try", "rules_try", try.tryPage)
	both("POST", "/rules/try", "rules_try", try.tryRun)
	both("GET", "/pipeline", "pipeline", pipe.pipelinePage)
	both("GET", "/silences", "silences", sil.silencesPage)
	both("POST", "/silences/add", "silence_change", sil.silenceAdd)
	both("POST", "/silences/expire", "silence_change", sil.silenceExpire)
	s.route("GET /api/v1/whoami", "whoami", false, func(w http.ResponseWriter, r *http.Request) {
		p, _ := principalOf(r.Context())
		writeJSON(w, http.StatusOK, map[string]string{"name": p.Name, "role": string(p.Role)})
	})
}

type loginView struct {
	Error string
	User  string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Load().Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.renderStatus(w, r, http.StatusOK, "login", "Log in", loginView{})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Load().Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	// The login form's token is bound to no session, as it was drawn.
	if err := s.auth.checkCSRF(r, ""); err != nil {
		s.metrics.logins.WithLabelValues("csrf").Inc()
		s.renderStatus(w, r, http.StatusForbidden, "login", "Log in", loginView{Error: "The form expired; please try again."})
		return
	}
	name, password := r.PostFormValue("user"), r.PostFormValue("password")
	ip := clientAddr(r, s.proxies)
	from := keyOf("addr", limitAddr(ip))
	pair := keyOf("user", name, limitAddr(ip))
	// Each try is charged as a failure before its password is checked
	// (take), and refunded if it was right: a burst of tries sent at
	// once is limited as tries one after another are.
	d, addrCharge := s.addrLimit.take(from)
	if d == 0 {
		if d, _ = s.pairLimit.take(pair); d > 0 {
			s.addrLimit.refund(addrCharge)
		}
	}
	if d > 0 {
		s.metrics.logins.WithLabelValues("limited").Inc()
		d = d.Truncate(time.Second) + time.Second
		w.Header().Set("Retry-After", strconv.Itoa(int(d.Seconds())))
		s.renderStatus(w, r, http.StatusTooManyRequests, "login", "Log in",
			loginView{Error: "Too many failed logins; try again in " + d.String() + ".", User: name})
		return
	}
	u, ok := s.auth.check(name, password)
	if !ok {
		s.metrics.logins.WithLabelValues("failed").Inc()
		s.deps.Logger.Warn("console login failed", "user", shorten(name, 64), "addr", ip)
		s.renderStatus(w, r, http.StatusUnauthorized, "login", "Log in", loginView{Error: "Wrong user name or password.", User: name})
		return
	}
	s.addrLimit.refund(addrCharge)
	s.pairLimit.reset(pair)
	s.metrics.logins.WithLabelValues("ok").Inc()
	s.deps.Logger.Info("console login", "user", u.Name, "role", u.Role, "addr", ip)
	s.auth.issue(w, u)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// shorten cuts a stranger's text for the log (a user name may be 16 KB).
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	// Anyone may post here: the form's body is read (for its token)
	// only up to the login form's bound.
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	p, ok := s.auth.fromSession(r)
	if err := s.auth.checkCSRF(r, p.session); err != nil {
		s.fail(w, r, http.StatusForbidden, err.Error())
		return
	}
	s.auth.clear(w)
	// Clearing the cookie ends the session in this browser only; a copy
	// of it ends when the revocation is recorded.
	if ok {
		ctx, cancel := context.WithTimeout(r.Context(), revocationTimeout)
		defer cancel()
		if err := s.deps.Revocations.Revoke(ctx, p.session, p.expires); err != nil {
			s.deps.Logger.Error("console logout not recorded", "user", p.Name, "err", err)
			s.fail(w, r, http.StatusServiceUnavailable, "You are logged out in this browser, but the logout could not be recorded "+
				"(NATS is unreachable): a copy of this session's cookie would still work until "+s.timeIn(p.expires)+
				", or until the user's password changes.")
			return
		}
		s.deps.Logger.Info("console logout", "user", p.Name)
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
