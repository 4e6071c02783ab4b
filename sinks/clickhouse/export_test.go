package clickhouse

// SetMaxLivePages bounds c's live view at n pages over all sites, below
// the pages an external test loads.
func SetMaxLivePages(c *Client, n int) { c.maxLivePages = n }
