package demotraffic

import (
	"mime"
	"net/mail"
	"os"
)

// Subject is the decoded subject of an email file the worker wrote:
// run.sh lists each email by it, and the worker writes non-ASCII
// subjects (a "×", an en dash) as folded RFC 2047 words a shell cannot
// read.
func Subject(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	m, err := mail.ReadMessage(f)
	if err != nil {
		return "", err
	}
	return new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
}
