package notify

import "errors"

// A Mailer's error tells the worker what kind of failure it is through
// these methods (sinks/mail's SendError has both), so the worker can
// branch on it without knowing the transport.
type (
	permanentFailure interface{ Permanent() bool }
	codedFailure     interface{ SMTPCode() int }
)

// isPermanent reports whether no retry can help: the job goes to the dead
// letters. An error that does not say is retried.
func isPermanent(err error) bool {
	var p permanentFailure
	return errors.As(err, &p) && p.Permanent()
}

// smtpCode is the server's reply code behind err, or 0 when there is none.
func smtpCode(err error) int {
	var c codedFailure
	if errors.As(err, &c) {
		return c.SMTPCode()
	}
	return 0
}
