package mail

import (
	"errors"
	"net/textproto"

	gomail "github.com/wneessen/go-mail"
)

// permanentError marks failures that no retry can fix: a malformed
// recipient, an empty recipient list.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err: err} }

// SendError is what Send returns: the failure, and what the worker needs
// to know of it.
type SendError struct{ err error }

func (e *SendError) Error() string { return e.err.Error() }
func (e *SendError) Unwrap() error { return e.err }

// Permanent reports whether retrying is pointless (see IsPermanent).
func (e *SendError) Permanent() bool { return IsPermanent(e.err) }

// SMTPCode is the server's reply code behind the failure, or 0.
func (e *SendError) SMTPCode() int { return SMTPCode(e.err) }

// SMTPCode returns the SMTP reply code behind err (e.g. 451, 550), or 0 if
// the failure did not come from a server reply (connection refused,
// timeout, TLS handshake, file transport).
func SMTPCode(err error) int {
	// Delivery failures arrive as go-mail SendErrors (possibly several,
	// joined); ErrorCode is the 4xx/5xx code go-mail parsed from the reply.
	var se *gomail.SendError
	if errors.As(err, &se) {
		if code := se.ErrorCode(); code != 0 {
			return code
		}
	}
	// Failures while connecting (EHLO, STARTTLS, AUTH) are not SendErrors
	// but wrap the raw reply.
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// IsPermanent reports whether retrying err is pointless: the server
// answered 5xx (unknown mailbox, policy rejection, bad credentials) or the
// message itself is unusable. Everything else — 4xx replies, network and
// TLS failures, timeouts, cancellation — is worth retrying later.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	var pe *permanentError
	if errors.As(err, &pe) {
		return true
	}
	if code := SMTPCode(err); code != 0 {
		return code >= 500 && code <= 599
	}
	var se *gomail.SendError
	if errors.As(err, &se) {
		switch se.Reason {
		case gomail.ErrGetSender, gomail.ErrGetRcpts, gomail.ErrNoUnencoded:
			return true
		}
	}
	return false
}
