package rules

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// decode reads a `rules:` list the way a config file holds it.
func decode(t *testing.T, src string) []Rule {
	t.Helper()
	var doc struct {
		Rules []Rule `yaml:"rules"`
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return doc.Rules
}

const validRule = `
  - name: ok
    site: example.com
    match: {exact: /}
    threshold: 10
    window: 1h
    notify: {recipients: [a@example.com]}
`

func TestValidateErrorsNameKeys(t *testing.T) {
	tests := []struct {
		name string
		yaml string // one rule, placed at index 1
		want []string
	}{
		{"everything missing", `
  - {}`, []string{
			`sweeper.rules[1].name: must match`,
			`sweeper.rules[1].match: exactly one of exact, prefix, glob, regex must be set`,
			`sweeper.rules[1].threshold: required`,
			`sweeper.rules[1].window: want a duration like "1h", day, week, month or all, got ""`,
			`sweeper.rules[1].notify.recipients: at least one address is needed`,
		}},
		{"visitors summed, all time, and guards out of range", `
  - name: r
    site: example.com
    match: {prefix: /}
    aggregate: sum
    count: visitors
    threshold: 10
    window: all
    clients: {max_top_share: 1.5, max_unknown_share: -0.1}
    notify: {recipients: [a@example.com]}`, []string{
			`sweeper.rules[1].count: visitors cannot be summed over pages`,
			`sweeper.rules[1].count: visitors are counted as far back as raw hits are kept`,
			`sweeper.rules[1].clients.max_top_share: must be a share from 0 (off) to below 1, got 1.5`,
			`sweeper.rules[1].clients.max_unknown_share: must be a share from 0 (off) to below 1, got -0.1`,
		}},
		{"count misspelt", `
  - name: r
    site: example.com
    match: {exact: /}
    count: visits
    threshold: 10
    window: 1h
    notify: {recipients: [a@example.com]}`, []string{
			`sweeper.rules[1].count: must be views or visitors, got "visits"`,
		}},
		{"receivers named badly", `
  - name: r
    site: example.com
    match: {exact: /}
    threshold: 10
    window: 1h
    notify: {receivers: [Ops Slack, pager, pager]}`, []string{
			`sweeper.rules[1].notify.receivers[0]: a receiver's name, matching`,
			`sweeper.rules[1].notify.receivers[2]: "pager" is named twice`,
		}},
		{"bad values", `
  - name: Bad Name
    site: example.com
    match: {glob: "/blog/a**"}
    aggregate: average
    threshold: [100, 100, 0]
    window: fortnight
    zone: Mars/Olympus
    rearm: {hysteresis: 1.5, cooldown: -1s}
    notify:
      recipients: [not-an-address]
      labels: {"bad-label": x}
      subject: "{{.Nope}}"
      body: "{{if}}"
    storm_guard: {max_individual: -1}`, []string{
			`sweeper.rules[1].name: must match ^[a-z0-9][a-z0-9_-]{0,63}$, got "Bad Name"`,
			`sweeper.rules[1].match.glob: "**" must be a whole segment, got "a**" in "/blog/a**"`,
			`sweeper.rules[1].aggregate: must be per_page or sum, got "average"`,
			`sweeper.rules[1].threshold[1]: milestones must be strictly increasing, got 100 after 100`,
			`sweeper.rules[1].threshold[2]: must be at least 1`,
			`sweeper.rules[1].window: want a duration like "1h", day, week, month or all, got "fortnight"`,
			`sweeper.rules[1].zone: unknown time zone "Mars/Olympus"`,
			`sweeper.rules[1].rearm.hysteresis: must be in [0, 1), got 1.5`,
			`sweeper.rules[1].rearm.cooldown: must not be negative, got -1s`,
			`sweeper.rules[1].notify.recipients[0]: mail: missing '@' or angle-addr`,
			`sweeper.rules[1].notify.labels.bad-label: label names must match`,
			`sweeper.rules[1].notify.subject: fails on a sample crossing: template: subject:1:2: executing "subject" at <.Nope>: can't evaluate field Nope`,
			`sweeper.rules[1].notify.body: template: body:1: missing value for if`,
			`sweeper.rules[1].storm_guard.max_individual: must not be negative, got -1`,
		}},
		{"match problems", `
  - name: m
    site: example.com
    match: {exact: pricing, prefix: /p}
    threshold: 1
    window: 30s
    notify: {recipients: [a@example.com]}
  - name: m2
    site: example.com
    match: {regex: "(unclosed"}
    threshold: 1
    window: 90s
    notify: {recipients: [a@example.com]}
  - name: m3
    site: example.com
    match: {glob: "blog/*"}
    threshold: 1
    window: day
    rearm: {cooldown: 1h}
    notify: {recipients: [a@example.com], subject: "{{.Labels.team}}"}
  - name: m3
    site: example.com
    match: {prefix: "x"}
    threshold: 1
    window: 1h
    zone: Europe/Berlin
    notify: {recipients: [a@example.com]}`, []string{
			`sweeper.rules[1].match: exactly one of exact, prefix, glob, regex must be set`,
			`sweeper.rules[1].window: a rolling window must be at least 1m (counts are per minute), got 30s`,
			`sweeper.rules[2].match.regex: error parsing regexp: missing closing ): ` + "`^(?:(unclosed)$`",
			`sweeper.rules[2].window: a rolling window must be whole minutes (counts are per minute), got 1m30s`,
			`sweeper.rules[3].match.glob: must start with /, got "blog/*"`,
			`sweeper.rules[3].rearm: only rolling windows with a single threshold re-arm`,
			`sweeper.rules[3].notify.subject: fails on a sample crossing: template: subject:1:9: executing "subject" at <.Labels.team>: map has no entry for key "team"`,
			`sweeper.rules[4].name: "m3" is already the name of sweeper.rules[3]`,
			`sweeper.rules[4].match.prefix: must start with /, got "x"`,
			`sweeper.rules[4].zone: only calendar windows (day, week, month), unusual rules and same_time baselines have a zone; window is 1h`,
		}},
		{"paths that no page is counted under", `
  - name: p1
    site: example.com
    match: {exact: /a//b}
    threshold: 1
    window: 1h
    notify: {recipients: [a@example.com]}
  - name: p2
    site: example.com
    match: {prefix: "/cart;JSESSIONID=x"}
    threshold: 1
    window: 1h
    notify: {recipients: [a@example.com]}`, []string{
			`sweeper.rules[1].match.exact: pages are counted with runs of slashes made one, so "/a//b" matches none`,
			`sweeper.rules[2].match.prefix: pages are counted without their ;jsessionid=, so "/cart;JSESSIONID=x" matches none`,
		}},
		{"milestones do not re-arm", `
  - name: ms
    site: example.com
    match: {exact: /}
    threshold: [10, 20]
    window: 1h
    rearm: {hysteresis: 0.2}
    notify: {recipients: [a@example.com]}`, []string{
			`sweeper.rules[1].rearm: only rolling windows with a single threshold re-arm`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rules := decode(t, "rules:"+validRule+tc.yaml)
			err := ValidateAll("sweeper.rules", rules)
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%s", len(lines), len(tc.want), err)
			}
			for i, want := range tc.want {
				if i < len(lines) && !strings.HasPrefix(lines[i], want) {
					t.Errorf("error %d:\n got %s\nwant %s…", i, lines[i], want)
				}
			}
		})
	}
}

func TestRegexLengthCap(t *testing.T) {
	r := Rule{Name: "r", Site: "s", Match: Match{Regex: "/" + strings.Repeat("a", MaxRegexLen)},
		Thresholds: Thresholds{1}, Window: ParseWindow("1h"), Notify: Notify{Recipients: []string{"a@example.com"}}}
	err := r.Validate("sweeper.rules[0]")
	if err == nil || err.Error() != "sweeper.rules[0].match.regex: longer than 1024 bytes (1025)" {
		t.Fatalf("err = %v", err)
	}
}

func TestThresholdsYAML(t *testing.T) {
	rules := decode(t, "rules:\n  - threshold: 1000\n  - threshold: [1, 2, 3]\n")
	if len(rules[0].Thresholds) != 1 || rules[0].Thresholds[0] != 1000 || rules[0].Thresholds.Milestones() {
		t.Errorf("scalar: %v", rules[0].Thresholds)
	}
	if len(rules[1].Thresholds) != 3 || !rules[1].Thresholds.Milestones() {
		t.Errorf("list: %v", rules[1].Thresholds)
	}
	var doc struct{ Rules []Rule }
	for _, bad := range []string{"rules: [{threshold: -5}]", "rules: [{threshold: [1, x]}]", "rules: [{threshold: {a: 1}}]", "rules: [{window: [1h]}]"} {
		if err := yaml.Unmarshal([]byte(bad), &doc); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestRoundTripYAML(t *testing.T) {
	rules := decode(t, "rules:"+validRule+"  - {name: b, window: day, threshold: [1, 2]}\n")
	var buf bytes.Buffer
	if err := yaml.NewEncoder(&buf).Encode(rules); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"window: 1h", "threshold: 10", "window: day", "- 1\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("encoded rules lack %q:\n%s", want, buf.String())
		}
	}
}

func TestRenderAndStormGuard(t *testing.T) {
	rules := decode(t, `rules:
  - name: r
    site: example.com
    match: {prefix: /}
    threshold: 10
    window: day
    zone: Europe/Berlin
    notify:
      recipients: [a@example.com]
      labels: {team: web}
      subject: "{{.Path}} passed {{.Threshold}} ({{.Labels.team}}, {{.WindowKey}})"
`)
	if err := ValidateAll("sweeper.rules", rules); err != nil {
		t.Fatal(err)
	}
	r := &rules[0]
	d := r.Sample()
	d.Path = "/pricing"
	subject, _, subjectOK, bodyOK, err := r.Render(d)
	if err != nil || !subjectOK || bodyOK || subject != "/pricing passed 10 (web, 2026-03-29)" {
		t.Errorf("Render = %q, %v, %v, %v", subject, subjectOK, bodyOK, err)
	}

	xs := []int{1, 2, 3, 4, 5}
	in, out := SplitStorm(StormGuard{MaxIndividual: 2}, xs)
	if len(in) != 2 || len(out) != 3 {
		t.Errorf("SplitStorm = %v, %v", in, out)
	}
	in, out = SplitStorm(StormGuard{}, xs)
	if len(in) != 5 || out != nil {
		t.Errorf("default SplitStorm = %v, %v", in, out)
	}
}

// TestClientGuardDefaults: the kinds that judge a page against its past
// are guarded against one-client surges unless told otherwise; threshold
// rules are not, and 0 turns a guard off.
func TestClientGuardDefaults(t *testing.T) {
	zero := 0.0
	for _, c := range []struct {
		r    Rule
		want float64
	}{
		{Rule{Thresholds: Thresholds{10}}, 0},
		{Rule{Spike: &Spike{}}, 0.5},
		{Rule{Unusual: &Unusual{}}, 0.5},
		{Rule{Spike: &Spike{}, Clients: ClientGuard{MaxTopShare: &zero, MaxUnknownShare: &zero}}, 0},
	} {
		top, unknown := c.r.Clients.Limits(c.r.Kind())
		if top != c.want || unknown != c.want {
			t.Errorf("%s: limits %v and %v, want %v", c.r.Kind(), top, unknown, c.want)
		}
	}
}
