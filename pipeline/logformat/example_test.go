package logformat_test

import (
	"errors"
	"fmt"

	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

func Example() {
	lines := []string{
		`83.149.9.216 - - [17/May/2015:12:05:03 +0200] "GET /blog/?page=2 HTTP/1.1" 200 20231 "-" "Mozilla/5.0"`,
		`2001:db8::1 - - [17/May/2015:10:05:04 +0000] "-" 408 - "-" "-"`,
		`not an access log line`,
	}
	var e logformat.Entry // reused: Parse overwrites every field
	for _, l := range lines {
		if err := logformat.Parse([]byte(l), &e); err != nil {
			var pe *logformat.ParseError
			if errors.As(err, &pe) {
				fmt.Println("rejected:", pe.Reason)
			}
			continue
		}
		fmt.Printf("%s %s %q %d %d\n", e.Client, e.Time.Format("2006-01-02T15:04:05Z"), e.Target, e.Status, e.Bytes)
	}
	// Output:
	// 83.149.9.216 2015-05-17T10:05:03Z "/blog/?page=2" 200 20231
	// 2001:db8::1 2015-05-17T10:05:04Z "" 408 -1
	// rejected: user
}
