package rules_test

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// The rule language as it appears under `sweeper:` in the config file.
const exampleYAML = `
rules:
  - name: blog-hot
    site: example.com
    match: {glob: /blog/*}
    threshold: 1000
    window: 1h
    rearm: {hysteresis: 0.1, cooldown: 6h}
    notify:
      recipients: [ops@example.com]
      labels: {team: web}
      subject: "{{.Path}} passed {{.Threshold}} views in {{.Window}} ({{.Labels.team}})"
    storm_guard: {max_individual: 5}
  - name: docs-daily
    site: example.com
    match: {glob: /docs/**}
    aggregate: sum
    threshold: [10000, 100000]
    window: day
    zone: Europe/Berlin
    notify: {recipients: [docs@example.com]}
  - name: launch
    site: example.com
    match: {regex: '/launch(/.*)?'}
    threshold: [100, 1000, 10000]
    window: all
    notify: {recipients: [ceo@example.com]}
`

func Example() {
	var cfg struct {
		Rules []rules.Rule `yaml:"rules"`
	}
	if err := yaml.Unmarshal([]byte(exampleYAML), &cfg); err != nil {
		panic(err)
	}
	if err := rules.ValidateAll("sweeper.rules", cfg.Rules); err != nil {
		panic(err)
	}
	blog, docs := &cfg.Rules[0], &cfg.Rules[1]
	fmt.Println(blog.Matches("example.com", "/blog/hello"), blog.Matches("example.com", "/blog/a/b"))
	fmt.Println(docs.Matches("example.com", "/docs/api/v2"))

	now := time.Date(2026, 3, 29, 10, 0, 0, 0, time.UTC)
	from, to := docs.Window.Bounds(now)
	fmt.Println(docs.Window.Key(now), from, to.Sub(from))

	var st rules.State
	st, fire := docs.Step(st, 150000, now)
	fmt.Println(fire)
	_, fire = docs.Step(st, 160000, now.Add(time.Hour))
	fmt.Println(fire)
	// Output:
	// true false
	// true
	// 2026-03-29 2026-03-29 00:00:00 +0100 CET 23h0m0s
	// [{10000 2026-03-29.10000} {100000 2026-03-29.100000}]
	// []
}
