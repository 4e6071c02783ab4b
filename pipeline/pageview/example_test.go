package pageview_test

import (
	"fmt"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

func Example() {
	cfg := pageview.DefaultConfig()
	cfg.KeepQuery = []string{"page"} // ?page=2 is another page; ?utm_source=... is not
	n, err := pageview.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	lines := []string{
		`1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /blog/?utm_source=feed&page=2 HTTP/1.1" 200 9120 "-" "Mozilla/5.0 (X11; Linux x86_64)"`,
		`1.2.3.4 - - [17/May/2015:10:05:04 +0000] "GET http://example.com/%7Eme/./caf%c3%a9 HTTP/1.1" 304 0 "-" "Mozilla/5.0 (X11; Linux x86_64)"`,
		`1.2.3.4 - - [17/May/2015:10:05:04 +0000] "GET /style.css HTTP/1.1" 200 811 "-" "Mozilla/5.0 (X11; Linux x86_64)"`,
		`66.249.73.135 - - [17/May/2015:10:05:05 +0000] "GET / HTTP/1.1" 200 9120 "-" "Mozilla/5.0 (compatible; Googlebot/2.1)"`,
		`1.2.3.4 - - [17/May/2015:10:05:06 +0000] "GET /old HTTP/1.1" 301 0 "-" "Mozilla/5.0 (X11; Linux x86_64)"`,
	}
	var e logformat.Entry
	var h hit.Hit
	for _, l := range lines {
		if err := logformat.Parse([]byte(l), &e); err != nil {
			fmt.Println(err)
			continue
		}
		if drop := n.Fill(&h, &e, "example.com"); drop != "" {
			fmt.Println("dropped:", drop)
			continue
		}
		// A tailer classifies through a cache of its own.
		cl := n.Classifier().Class(e.UserAgent)
		fmt.Println(h.Site, h.Path, h.Status, cl, n.Counts(cl))
	}
	// Output:
	// example.com /blog/?page=2 200 human true
	// example.com /~me/caf%C3%A9 304 human true
	// dropped: static
	// example.com / 200 bot false
	// dropped: status
}

func ExampleNormalizer_Path() {
	n, _ := pageview.New(pageview.DefaultConfig())
	for _, target := range []string{"/a/../b?x=1", "/%7euser/%2f", "/a\nb", "*"} {
		page, ok := n.Path(target)
		fmt.Printf("%q %q %v\n", target, page, ok)
	}
	// Output:
	// "/a/../b?x=1" "/b" true
	// "/%7euser/%2f" "/~user/%2F" true
	// "/a\nb" "/a%0Ab" true
	// "*" "" false
}
