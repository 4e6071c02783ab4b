package clickhouse

// SetMaxLivePages bounds c's live view at n pages over all sites, below
// the pages an external test loads.
func SetMaxLivePages(c *Client, n int) { c.maxLivePages = n }

// KeptSealed is how many page_days halves c keeps (sealedcache.go).
func KeptSealed(c *Client) int {
	c.sealed.mu.Lock()
	defer c.sealed.mu.Unlock()
	return len(c.sealed.entries)
}
