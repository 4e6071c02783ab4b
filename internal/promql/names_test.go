package promql_test

import (
	"slices"
	"testing"

	"github.com/pagewatch/pagewatch/internal/promql"
)

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.95, sum by (le, limit) (rate(a_bucket{job=~"$job", x="y(z)"}[$__rate_interval]))) / on (job) group_left (instance) b > 1e3 and up offset 5m`: {"a_bucket", "b", "up"},
		`max(a and on (job, instance) (b == 1)) > 300 and time() - c{x="y"} > 2 * 86400 or up offset 5m`:                                                                   {"a", "b", "c", "up"},
	} {
		if got := promql.MetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("MetricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}
