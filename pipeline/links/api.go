package links

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	htmltemplate "html/template"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

// API serves the links mailed by the worker, under Prefix:
//
//	GET  /links/unsubscribe?t=…  a page asking to confirm, with a POST form
//	POST /links/unsubscribe?t=…  unsubscribe: the recipient gets nothing more from the rule
//	GET  /links/snooze?t=…       a page asking to confirm
//	POST /links/snooze?t=…       silence the page for worker.links.snooze_for
//
// A GET changes nothing, so mail scanners that fetch links do not
// unsubscribe anyone; the POST needs no body beyond what RFC 8058's
// one-click sends (List-Unsubscribe=One-Click). A forged token is refused
// with 403, an expired one with 410. Each link gets linkBurst requests,
// then one per linkEvery (429 beyond), and so does each caller address
// for links that are not valid: the links are public.
type API struct {
	Signer       *Signer
	Unsubscribes *Unsubscribes
	Silences     *silence.Store
	Logger       *slog.Logger
	Now          func() time.Time // nil: time.Now

	limits *callers
}

// Handler returns the API's routes.
func (a *API) Handler() http.Handler {
	if a.Now == nil {
		a.Now = time.Now
	}
	if a.Logger == nil {
		a.Logger = slog.New(slog.DiscardHandler)
	}
	a.limits = newCallers(linkBurst, linkEvery, maxCallers)
	mux := http.NewServeMux()
	for _, action := range []string{ActionUnsubscribe, ActionSnooze} {
		mux.HandleFunc("GET "+Prefix+action, func(w http.ResponseWriter, r *http.Request) { a.serve(w, r, action, false) })
		mux.HandleFunc("POST "+Prefix+action, func(w http.ResponseWriter, r *http.Request) { a.serve(w, r, action, true) })
	}
	return mux
}

type linkPage struct {
	Title, Text string
	Action      string // the form's target, "" for no form
	Button      string
	OneClick    bool
}

var linkPageTmpl = htmltemplate.Must(htmltemplate.New("link").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>{{.Title}}</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto">
<h1>{{.Title}}</h1>
<p style="word-break: break-all">{{.Text}}</p>
{{- if .Action}}
<form method="post" action="{{.Action}}">
{{- if .OneClick}}<input type="hidden" name="List-Unsubscribe" value="One-Click">{{end}}
<button type="submit">{{.Button}}</button>
</form>
{{- end}}
</body></html>
`))

func (a *API) serve(w http.ResponseWriter, r *http.Request, action string, post bool) {
	token := r.URL.Query().Get("t")
	c, err := a.Signer.Verify(token, action, a.Now())
	// A link's own uses are limited per link, so a caller sending junk
	// does not use up the bucket of a real link behind the same proxy
	// (a mail provider's one-click unsubscribe); junk per address.
	key := "addr " + callerAddr(r)
	if err == nil {
		_, sig, _ := strings.Cut(token, ".")
		key = "link " + sig
	}
	if !a.limits.allow(key, a.Now()) {
		w.Header().Set("Retry-After", "10")
		a.page(w, http.StatusTooManyRequests, linkPage{Title: "Try again", Text: "Too many requests just now; please try again in a minute."})
		return
	}
	switch {
	case errors.Is(err, ErrTokenExpired):
		a.page(w, http.StatusGone, linkPage{Title: "Link expired", Text: "This link has expired. Links in pagewatch emails work for a limited time; the latest email has a fresh one."})
		return
	case err != nil:
		a.page(w, http.StatusForbidden, linkPage{Title: "Link not valid", Text: "This link is not valid: it may have been cut short or changed."})
		return
	}
	if !post {
		// Relative, so it works behind a proxy that serves the links
		// under a path of its own (base_url with a path).
		p := linkPage{Action: action + "?t=" + token}
		if action == ActionUnsubscribe {
			p.Title, p.Button, p.OneClick = "Unsubscribe", "Unsubscribe", true
			p.Text = c.Recipient + " will get no more emails from pagewatch rule " + c.Rule + "."
		} else {
			p.Title, p.Button = "Snooze this page", "Snooze for "+a.Signer.SnoozeFor().String()
			p.Text = "No notifications from rule " + c.Rule + " about " + c.Path + " on " + c.Site + " for " + a.Signer.SnoozeFor().String() + ", to anyone."
		}
		a.page(w, http.StatusOK, p)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if action == ActionUnsubscribe {
		if err := a.Unsubscribes.Add(ctx, c.Rule, c.Recipient, a.Now()); err != nil {
			a.Logger.Error("unsubscribe failed", "rule", c.Rule, "err", err)
			a.page(w, http.StatusServiceUnavailable, linkPage{Title: "Try again", Text: "The unsubscribe could not be stored just now; please try again in a minute."})
			return
		}
		a.Logger.Info("recipient unsubscribed", "rule", c.Rule, "recipient", c.Recipient)
		a.page(w, http.StatusOK, linkPage{Title: "Unsubscribed", Text: c.Recipient + " will get no more emails from pagewatch rule " + c.Rule + "."})
		return
	}
	now := a.Now()
	// One silence per link: its ID comes from the token, so using the
	// link again (or anyone it was forwarded to using it) adds nothing.
	// It mutes the one rule the mail was about, for everyone.
	sl, err := a.Silences.Add(ctx, silence.Silence{
		ID:     snoozeID(token),
		Match:  crossing.Match{Site: c.Site, Rule: c.Rule, Page: PageGlob(c.Path)},
		EndsAt: now.Add(a.Signer.SnoozeFor()), Author: c.Recipient,
		Comment: "snoozed from an email link (rule " + c.Rule + ")",
	}, now)
	if err != nil {
		a.Logger.Error("snooze failed", "site", c.Site, "err", err)
		a.page(w, http.StatusServiceUnavailable, linkPage{Title: "Try again", Text: "The snooze could not be stored just now; please try again in a minute."})
		return
	}
	a.Logger.Info("page snoozed", "site", c.Site, "silence", sl.ID, "by", c.Recipient)
	a.page(w, http.StatusOK, linkPage{Title: "Snoozed", Text: "No notifications from rule " + c.Rule + " about " + c.Path + " on " + c.Site + " until " + sl.EndsAt.Format(time.RFC1123) + "."})
}

// snoozeID is the silence ID of a snooze link's token.
func snoozeID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "snooze-" + hex.EncodeToString(sum[:8])
}

func (a *API) page(w http.ResponseWriter, status int, p linkPage) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	_ = linkPageTmpl.Execute(w, p)
}
