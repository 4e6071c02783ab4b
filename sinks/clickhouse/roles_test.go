package clickhouse_test

import (
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/pipeline/retention"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// The ports each role implements. report.Sealed is the one that matters
// most: the report stage asserts it at run time, so a Counts without
// SealedBefore would compile and silently read every minute. The sweep's
// and notify's ports are checked where cmd wires them.
var (
	_ load.Store      = clickhouse.Hits{}
	_ retention.Store = clickhouse.Hits{}
	_ report.Counts   = clickhouse.Counts{}
	_ report.Sealed   = clickhouse.Counts{}
	_ console.Store   = clickhouse.Console{}
)

// The roles implement the console's ports; the store does not import the
// console (whose own imports would then be the store's), so this test
// says it instead.
var (
	_ console.Store    = clickhouse.Console{}
	_ console.WhyStore = clickhouse.History{}
)
