package smtptest

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// go-sasl only ships PLAIN among the password mechanisms, so the others
// clients commonly use are implemented here, just enough for tests.

// loginServer implements the obsolete but widespread LOGIN mechanism.
type loginServer struct {
	check func(user, pass string) error
	user  string
	step  int
}

func (s *loginServer) Next(resp []byte) ([]byte, bool, error) {
	// An initial response, if any, is the username.
	if s.step == 0 && resp != nil {
		s.step = 1
	}
	switch s.step {
	case 0:
		s.step = 1
		return []byte("Username:"), false, nil
	case 1:
		s.user = string(resp)
		s.step = 2
		return []byte("Password:"), false, nil
	case 2:
		s.step = 3
		return nil, true, s.check(s.user, string(resp))
	}
	return nil, false, sasl.ErrUnexpectedClientResponse
}

// cramMD5Server implements CRAM-MD5 (RFC 2195): the client proves knowledge
// of the password by HMAC-ing a server challenge with it.
type cramMD5Server struct {
	user, pass string
	ok         func()
	challenge  []byte
}

func newCRAMMD5Server(user, pass string, ok func()) *cramMD5Server {
	return &cramMD5Server{user: user, pass: pass, ok: ok}
}

func (s *cramMD5Server) Next(resp []byte) ([]byte, bool, error) {
	if s.challenge == nil {
		s.challenge = fmt.Appendf(nil, "<%s@smtptest>", rand.Text())
		return s.challenge, false, nil
	}
	user, digest, found := bytes.Cut(resp, []byte(" "))
	mac := hmac.New(md5.New, []byte(s.pass))
	mac.Write(s.challenge)
	want := hex.EncodeToString(mac.Sum(nil))
	if !found || string(user) != s.user || !hmac.Equal(digest, []byte(want)) {
		return nil, true, smtp.ErrAuthFailed
	}
	s.ok()
	return nil, true, nil
}

// xoauth2Server implements Google/Microsoft XOAUTH2: one initial response
// "user=U\x01auth=Bearer T\x01\x01". On failure the server sends a JSON
// error challenge, the client answers with an empty line, then 535 follows.
type xoauth2Server struct {
	check  func(user, pass string) error
	failed bool
}

func (s *xoauth2Server) Next(resp []byte) ([]byte, bool, error) {
	if s.failed {
		return nil, true, smtp.ErrAuthFailed
	}
	if resp == nil {
		return []byte{}, false, nil
	}
	var user, token string
	for _, field := range bytes.Split(resp, []byte{1}) {
		if v, ok := bytes.CutPrefix(field, []byte("user=")); ok {
			user = string(v)
		}
		if v, ok := bytes.CutPrefix(field, []byte("auth=Bearer ")); ok {
			token = string(v)
		}
	}
	if err := s.check(user, token); err != nil {
		s.failed = true
		return []byte(`{"status":"401","schemes":"bearer"}`), false, nil
	}
	return nil, true, nil
}
