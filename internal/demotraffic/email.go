package demotraffic

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"strings"
)

// Subject is the decoded subject of an email file the worker wrote:
// run.sh lists each email by it, and the worker writes non-ASCII
// subjects (a "×", an en dash) as folded RFC 2047 words a shell cannot
// read.
func Subject(path string) (string, error) {
	m, f, err := readEmail(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
}

// Show writes an email file as a reader sees it: its subject, sender and
// recipients decoded, then its plain-text part, decoded from
// quoted-printable (the raw file folds long lines with "=" and writes
// "×" as "=C3=97"). The HTML part and the chart are for a mail client.
func Show(w io.Writer, path string) error {
	m, f, err := readEmail(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := new(mime.WordDecoder)
	for _, h := range []string{"Subject", "From", "To", "Date"} {
		v, err := dec.DecodeHeader(m.Header.Get(h))
		if err != nil {
			return fmt.Errorf("%s: header %s: %w", path, h, err)
		}
		fmt.Fprintf(w, "%s: %s\n", h, v)
	}
	fmt.Fprintln(w)
	text, err := plainText(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if !strings.HasSuffix(text, "\n") {
		text += "\n" // the line break before a part's boundary is the boundary's
	}
	_, err = io.WriteString(w, text)
	return err
}

// plainText is the first text/plain part, looked for through nested
// multiparts.
func plainText(contentType, encoding string, body io.Reader) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("content type %q: %w", contentType, err)
	}
	if strings.HasPrefix(mt, "multipart/") {
		r := multipart.NewReader(body, params["boundary"])
		for {
			p, err := r.NextRawPart()
			if errors.Is(err, io.EOF) {
				return "", nil
			}
			if err != nil {
				return "", err
			}
			s, err := plainText(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p)
			if err != nil || s != "" {
				return s, err
			}
		}
	}
	if mt != "text/plain" {
		return "", nil
	}
	if strings.EqualFold(encoding, "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, err := io.ReadAll(body)
	return string(b), err
}

func readEmail(path string) (*mail.Message, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := mail.ReadMessage(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, f, nil
}
