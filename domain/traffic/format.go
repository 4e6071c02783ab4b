package traffic

import (
	"fmt"
	"strconv"
)

// FormatCount writes a count as people read it, with thousands
// separators: 1234567 → "1,234,567". Mails, chat messages and reports all
// write counts this way.
func FormatCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// FormatViews writes a count of views: "1 view", "1,234 views".
func FormatViews(n uint64) string {
	if n == 1 {
		return "1 view"
	}
	return FormatCount(n) + " views"
}

// FormatBytes writes a byte count people read: "1,234,567 B (1.2 MiB)".
func FormatBytes(n int64) string {
	n = max(n, 0)
	s := FormatCount(uint64(n)) + " B"
	const mib = 1 << 20
	switch {
	case n >= 1<<30:
		s += fmt.Sprintf(" (%.1f GiB)", float64(n)/(1<<30))
	case n >= mib:
		s += fmt.Sprintf(" (%.1f MiB)", float64(n)/mib)
	case n >= 1<<10:
		s += fmt.Sprintf(" (%.1f KiB)", float64(n)/(1<<10))
	}
	return s
}
