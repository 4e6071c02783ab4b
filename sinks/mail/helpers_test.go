package mail_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

func testNotification() notify.Notification {
	return notify.Notification{
		Key:        "pricing-hourly.3f2a9c.1",
		Rule:       "pricing-hourly",
		Site:       "example.com",
		Path:       "/pricing",
		Count:      1234,
		Threshold:  1000,
		Window:     "1h",
		CrossedAt:  time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600)),
		Recipients: []string{"ops@example.com"},
	}
}

// smtpConfig points a Sender at srv with STARTTLS, PLAIN auth and the
// server's self-signed certificate accepted.
func smtpConfig(srv *smtptest.Server) mail.Config {
	cfg := mail.DefaultConfig()
	cfg.Transport = mail.TransportSMTP
	cfg.From = "pagewatch@example.com"
	cfg.SMTP.Host = srv.Host
	cfg.SMTP.Port = srv.Port
	cfg.SMTP.TLS = mail.TLSMandatory
	cfg.SMTP.Auth = mail.AuthPlain
	cfg.SMTP.Username = "user"
	cfg.SMTP.Password = secret.New("pass")
	cfg.SMTP.Timeout = 5 * time.Second
	cfg.SMTP.HELO = "pagewatch.test"
	cfg.SMTP.InsecureSkipVerify = true
	return cfg
}

func newSender(t *testing.T, cfg mail.Config) *mail.Sender {
	t.Helper()
	s, err := mail.New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// parsed is a received message taken apart the way a mail client would.
type parsed struct {
	HeaderBlock string // raw, up to the first empty line
	Header      netmail.Header
	Subject     string // RFC 2047-decoded
	Text, HTML  string // decoded bodies of the two alternatives
	Images      []inline
	// Structure is the MIME tree, e.g.
	// "multipart/related(multipart/alternative(text/plain,text/html),image/png)".
	Structure string
}

// inline is an image part.
type inline struct {
	Header textproto.MIMEHeader
	Data   []byte // decoded
}

func parseMessage(t *testing.T, data []byte) parsed {
	t.Helper()
	var p parsed
	block, _, ok := bytes.Cut(data, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no end of header block in %q", data)
	}
	p.HeaderBlock = string(block)

	msg, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ReadMessage: %v", err)
	}
	p.Header = msg.Header
	p.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatalf("decode subject: %v", err)
	}
	ct := msg.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt != "multipart/alternative" && mt != "multipart/related" {
		t.Fatalf("Content-Type = %q, want multipart/alternative or, with a chart, multipart/related", ct)
	}
	p.Structure = walkPart(t, &p, ct, msg.Body)
	if p.Text == "" || p.HTML == "" {
		t.Fatalf("want both alternatives, got text=%t html=%t", p.Text != "", p.HTML != "")
	}
	return p
}

// walkPart decodes one MIME part of type contentType, recursing into
// multiparts, and returns its structure.
func walkPart(t *testing.T, p *parsed, contentType string, body io.Reader) string {
	t.Helper()
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("Content-Type %q: %v", contentType, err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		t.Fatalf("walkPart on %q", mediaType)
	}
	var kids []string
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart() // decodes quoted-printable itself
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("NextPart: %v", err)
		}
		ct := part.Header.Get("Content-Type")
		mt, _, _ := mime.ParseMediaType(ct)
		if strings.HasPrefix(mt, "multipart/") {
			kids = append(kids, walkPart(t, p, ct, part))
			continue
		}
		kids = append(kids, mt)
		var r io.Reader = part
		if strings.EqualFold(part.Header.Get("Content-Transfer-Encoding"), "base64") {
			r = base64.NewDecoder(base64.StdEncoding, part)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("read part: %v", err)
		}
		switch mt {
		case "text/plain":
			p.Text = string(data)
		case "text/html":
			p.HTML = string(data)
		case "image/png":
			p.Images = append(p.Images, inline{Header: part.Header, Data: data})
		default:
			t.Errorf("unexpected part %q", mt)
		}
	}
	return mediaType + "(" + strings.Join(kids, ",") + ")"
}
