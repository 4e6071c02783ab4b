package prometheus_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/internal/metricsdoc"
	"github.com/pagewatch/pagewatch/internal/promql"
)

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
	Line        int               `yaml:"-"`
}

type ruleFile struct {
	Groups []struct {
		Name  string      `yaml:"name"`
		Rules []yaml.Node `yaml:"rules"`
	} `yaml:"groups"`
}

// loadRules decodes alerts.yml strictly: a misspelt key is an error here,
// where Prometheus would only log it.
func loadRules(t *testing.T) []rule {
	t.Helper()
	raw, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var f ruleFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	var out []rule
	for _, g := range f.Groups {
		if g.Name == "" {
			t.Error("alerts.yml: a group without a name")
		}
		for _, n := range g.Rules {
			var r rule
			if err := n.Decode(&r); err != nil {
				t.Errorf("alerts.yml:%d: %v", n.Line, err)
				continue
			}
			r.Line = n.Line
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatal("alerts.yml has no rules")
	}
	return out
}

var promDuration = regexp.MustCompile(`^([0-9]+(ms|[smhdwy]))+$`)

func TestAlertRules(t *testing.T) {
	doc, err := metricsdoc.Read("../metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range loadRules(t) {
		at := fmt.Sprintf("alerts.yml:%d", r.Line)
		if r.Alert == "" {
			t.Errorf("%s: a rule without alert (recording rules do not belong here)", at)
			continue
		}
		at += " " + r.Alert
		if prev, ok := seen[r.Alert]; ok {
			t.Errorf("%s: name also used at line %d", at, prev)
		}
		seen[r.Alert] = r.Line
		if !strings.HasPrefix(r.Alert, "Pagewatch") {
			t.Errorf("%s: alert names start with Pagewatch", at)
		}
		if strings.TrimSpace(r.Expr) == "" {
			t.Errorf("%s: no expr", at)
		}
		if !promDuration.MatchString(r.For) {
			t.Errorf("%s: for: %q is no Prometheus duration", at, r.For)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: labels.severity %q, want critical or warning", at, s)
		}
		for _, a := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no annotations.%s", at, a)
			}
		}
		names := promql.MetricNames(r.Expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric found in %q", at, r.Expr)
		}
		for _, n := range names {
			if !doc.Serves(n, external...) {
				t.Errorf("%s: metric %s is not in deploy/metrics.md (expr %q)", at, n, r.Expr)
			}
		}
	}
}

// TestPromtoolCheck validates the rule file and the example configuration
// with Prometheus' own parser.
func TestPromtoolCheck(t *testing.T) {
	promtool := promql.Promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"check", "config", "prometheus.yml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertUnitTests runs alerts_test.yml, and checks that it makes every
// alert fire at least once.
func TestAlertUnitTests(t *testing.T) {
	raw, err := os.ReadFile("alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				AlertName string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatalf("alerts_test.yml: %v", err)
	}
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			fires[a.AlertName] = fires[a.AlertName] || len(a.ExpAlerts) > 0
		}
	}
	for _, r := range loadRules(t) {
		if !fires[r.Alert] {
			t.Errorf("alerts_test.yml has no case where %s fires", r.Alert)
		}
	}

	promtool := promql.Promtool(t)
	out, err := exec.Command(promtool, "test", "rules", "alerts_test.yml").CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules alerts_test.yml: %v\n%s", err, out)
	}
}

// Metrics outside deploy/metrics.md that the rules may use: Prometheus'
// own up, and the blackbox exporter's probe_success for /readyz (pagewatch
// exports no readiness metric).
var external = []string{"up", "probe_success"}
