package tail

import (
	"bytes"

	"github.com/pagewatch/pagewatch/pipeline/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// maxPathBytes caps stored paths: a hostile client can send megabytes.
const maxPathBytes = 1024

// pageview turns a parsed line into a hit, or says why it is none.
// The query string and fragment are dropped so /a?x=1 and /a?x=2 count as
// one page; an absolute-form target (proxies) keeps only its path.
func pageview(e *logformat.Entry, site string) (h hit.Hit, skip string) {
	if len(e.Method) == 0 || len(e.Target) == 0 {
		return h, "no_request"
	}
	target := e.Target
	if i := bytes.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	for _, scheme := range [][]byte{[]byte("http://"), []byte("https://")} {
		if bytes.HasPrefix(target, scheme) {
			rest := target[len(scheme):]
			if i := bytes.IndexByte(rest, '/'); i >= 0 {
				target = rest[i:]
			} else {
				target = []byte("/")
			}
		}
	}
	if len(target) == 0 || target[0] != '/' {
		return h, "not_a_path"
	}
	if len(target) > maxPathBytes {
		target = target[:maxPathBytes]
	}
	h = hit.Hit{
		Time:      e.Time,
		Site:      site,
		Path:      string(target),
		Method:    string(e.Method),
		Status:    uint16(e.Status),
		Referer:   string(e.Referer),
		UserAgent: string(e.UserAgent),
	}
	if e.Bytes > 0 {
		h.Bytes = uint64(e.Bytes)
	}
	return h, ""
}
