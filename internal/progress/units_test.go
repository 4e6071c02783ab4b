package progress

import (
	"testing"
	"time"
)

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{formatBytes(0), "0 B"},
		{formatBytes(1023), "1023 B"},
		{formatBytes(1024), "1.00 KiB"},
		{formatBytes(1536), "1.50 KiB"},
		{formatBytes(10*1024 - 1), "10.0 KiB"}, // 9.999 rounds up a digit, not to "10.00"
		{formatBytes(999 * mib), "999 MiB"},
		{formatBytes(1023 * mib), "1023 MiB"},
		{formatBytes(3 << 30), "3.00 GiB"},
		{formatBytes(5 << 40), "5.00 TiB"},
		{formatBytes(1<<63 - 1), "8.00 EiB"},
		{formatCount(0), "0"},
		{formatCount(999), "999"},
		{formatCount(1000), "1.00k"},
		{formatCount(12_345), "12.3k"},
		{formatCount(999_499), "999k"},
		{formatCount(999_500), "1.00M"}, // never "1000k"
		{formatCount(12_345_678), "12.3M"},
		{formatCount(4_000_000_000), "4.00G"},
		{formatThousands(0), "0"},
		{formatThousands(999), "999"},
		{formatThousands(1000), "1,000"},
		{formatThousands(12_345_678), "12,345,678"},
		{formatThousands(-1_234), "-1,234"},
		{formatClock(0), "0:00:00"},
		{formatClock(59*time.Second + 600*time.Millisecond), "0:01:00"},
		{formatClock(3*time.Hour + 4*time.Minute + 5*time.Second), "3:04:05"},
		{formatClock(100 * time.Hour), "100:00:00"},
		{formatClock(-time.Second), "0:00:00"},
		{shortenPath("/var/log/access.log", 40), "/var/log/access.log"},
		{shortenPath("/var/log/access.log", 12), "…/access.log"},
		{shortenPath("/var/log/åccess.log", 10), "…ccess.log"}, // runes, not bytes
		{shortenPath("abc", 0), ""},
		{cutLine("12.3% 45 MiB", 5), "12.3%"},
		{cutLine("short", 80), "short"},
		{cutLine("x", -1), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
