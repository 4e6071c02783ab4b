package democlock

import (
	"testing"
	"time"
)

func TestClockRunsFasterFromStart(t *testing.T) {
	c, err := Parse("2026-05-04T14:00:00Z@120x")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 5, 4, 14, 0, 0, 0, time.UTC)
	if got := c.At(start.Add(-time.Minute)); !got.Equal(start.Add(-time.Minute)) {
		t.Errorf("before start: %v, want the wall clock", got)
	}
	if got := c.At(start.Add(30 * time.Second)); !got.Equal(start.Add(time.Hour)) {
		t.Errorf("30 s after start at 120x: %v, want an hour on", got)
	}
	if got := c.Wall(start.Add(time.Hour)); !got.Equal(start.Add(30 * time.Second)) {
		t.Errorf("Wall: %v", got)
	}
	again, err := Parse(c.String())
	if err != nil || again != c {
		t.Errorf("String %q parses to %v, %v", c.String(), again, err)
	}
	if u, err := Parse("1777903200.5@60x"); err != nil || !u.Start.Equal(time.Unix(1777903200, 5e8)) || u.Speed != 60 {
		t.Errorf("Unix seconds: %v, %v", u, err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{"", "2026-05-04T14:00:00Z", "2026-05-04T14:00:00Z@120", "yesterday@2x", "2026-05-04T14:00:00Z@0.5x", "2026-05-04T14:00:00Z@1e9x"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}
