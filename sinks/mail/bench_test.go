package mail

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// BenchmarkRenderWithChart renders and serialises a notification with a
// day of per-minute hits and ten referrers: the worker's cost per mail
// before the transport.
func BenchmarkRenderWithChart(b *testing.B) {
	r, err := newRenderer("pagewatch@example.com")
	if err != nil {
		b.Fatal(err)
	}
	end := time.Date(2025, 3, 4, 11, 0, 0, 0, time.UTC)
	n := notify.Notification{Key: "pricing-daily.3f2a9c.1", Rule: "pricing-daily", Site: "example.com", Path: "/pricing",
		Count: 100234, Threshold: 100000, Window: "24h", CrossedAt: end.Add(-time.Minute),
		Recipients: []string{"ops@example.com"}, WindowStart: end.Add(-24 * time.Hour), WindowEnd: end,
		Series: perMinute(end.Add(-24*time.Hour), 1440, func(i int) uint64 { return uint64(50 + i%97) })}
	for i := range 10 {
		n.Referrers = append(n.Referrers, traffic.Referrer{Referer: fmt.Sprintf("https://ref%d.example/some/path?q=%d", i, i), Hits: uint64(1000 - i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := r.message(n)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
