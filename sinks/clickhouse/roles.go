package clickhouse

// The roles of a Client (see the package comment). Each is a value that
// holds the Client alone: making one costs nothing, handing one to an
// interface allocates nothing, and none has anything to close.

// Hits writes what the loader loads, the raw hits with their per-minute
// counts, and drops old days of raw hits: load.Store and retention.Store.
type Hits struct{ c *Client }

// Counts reads the per-minute, per-hour and per-day counts the sweeper
// and the reports judge, and seals the days the daily and hourly tables
// hold: sweep.Counter (with sweep.MinuteSource), report.Counts and
// report.Sealed.
type Counts struct{ c *Client }

// History records crossings and notification outcomes, and reads them
// back with the operators' actions: sweep.Recorder, notify.Recorder and
// console.HistoryStore.
type History struct{ c *Client }

// Traffic reads a page's views as people look at them: the console's
// pages, an email's chart and referrers, a crossing's why.
// console.TrafficStore, notify.Stats and sweep.Explainer.
type Traffic struct{ c *Client }

// Console is the console's port, console.Store: its reads of the history
// and of the traffic, which the console takes as one.
type Console struct {
	History
	Traffic
}

// Hits returns the loader's role.
func (c *Client) Hits() Hits { return Hits{c} }

// Counts returns the sweeper's and the reports' role.
func (c *Client) Counts() Counts { return Counts{c} }

// History returns the crossing and notification history.
func (c *Client) History() History { return History{c} }

// Traffic returns the per-page reads for the console, emails and whys.
func (c *Client) Traffic() Traffic { return Traffic{c} }

// Console returns the console's store.
func (c *Client) Console() Console { return Console{History{c}, Traffic{c}} }
