package syslog_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/syslog"
)

// A Listener receiving what nginx sends for
//
//	access_log syslog:server=127.0.0.1:5514 combined;
func Example() {
	cfg := syslog.DefaultConfig()
	cfg.ListenUDP = "127.0.0.1:0" // a free port, for the example
	cfg.Tags = []string{"nginx"}
	cfg.Timezone = "UTC"

	got := make(chan string, 1)
	handle := func(m *syslog.Message) {
		// Content is only valid during the call: format (copy) it now.
		got <- fmt.Sprintf("facility=%d severity=%d host=%s app=%s time=%s\n%s",
			m.Facility, m.Severity, m.Hostname, m.AppName, m.Timestamp.Format(time.Stamp), m.Content)
	}
	l, err := syslog.New(cfg, handle, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()

	// Play nginx: one datagram per access-log line.
	c, err := net.Dial("udp", l.UDPAddr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Fprint(c, `<190>Nov  2 10:00:00 web1 nginx: 203.0.113.9 - - [02/Nov/2024:10:00:00 +0000] "GET /pricing HTTP/1.1" 200 512 "-" "curl/8.5.0"`)

	fmt.Println(<-got)
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// facility=23 severity=6 host=web1 app=nginx time=Nov  2 10:00:00
	// 203.0.113.9 - - [02/Nov/2024:10:00:00 +0000] "GET /pricing HTTP/1.1" 200 512 "-" "curl/8.5.0"
	// Run: <nil>
}

func ExampleParser_Parse() {
	p := syslog.Parser{Location: time.UTC}
	var m syslog.Message
	received := time.Date(2024, 11, 22, 10, 0, 1, 0, time.UTC)
	for _, in := range []string{
		"<190>Nov 22 10:00:00 web1 nginx: GET /a",                            // nginx, RFC 3164
		"<190>Nov 22 10:00:00 nginx: GET /b",                                 // nginx with nohostname
		"<190>1 2024-11-22T10:00:00Z web1 nginx - - [x@1 k=\"v\\]\"] GET /c", // RFC 5424
		"\x16\x03\x01\x02\x00",                                               // a TLS handshake sent to the syslog port
	} {
		if err := p.Parse([]byte(in), received, &m); err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%q %q %s %q\n", m.Hostname, m.AppName, m.Timestamp.Format(time.RFC3339), m.Content)
	}
	// Output:
	// "web1" "nginx" 2024-11-22T10:00:00Z "GET /a"
	// "" "nginx" 2024-11-22T10:00:00Z "GET /b"
	// "web1" "nginx" 2024-11-22T10:00:00Z "GET /c"
	// error: syslog: bad pri at byte 0
}
