package traffic

import "strconv"

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
