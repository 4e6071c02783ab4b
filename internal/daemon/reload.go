package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/secret"
)

// A reload reads the config file again on SIGHUP. An invalid file is
// rejected whole, its errors naming the keys, and the running config stays.
// A valid one is handed to the parts that can apply it; every other change
// is logged as waiting for a restart, so no one believes an edit took
// effect when it did not.

type reloadHook[C Config] struct {
	keys  []string // dotted key prefixes the hook applies
	apply func(C) error
}

// OnReload registers apply to receive each valid reloaded config. keys
// are the config keys (dotted prefixes, "mail", "sweeper.rules") it puts
// into effect; log.level is always applied.
func (e *Env[C]) OnReload(keys []string, apply func(C) error) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.hooks = append(e.hooks, reloadHook[C]{keys: keys, apply: apply})
}

type reloadMetrics struct {
	reloads *prometheus.CounterVec
	lastOK  prometheus.Gauge
}

func newReloadMetrics(reg prometheus.Registerer) *reloadMetrics {
	m := &reloadMetrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_config_reloads_total",
			Help: "Config reloads (SIGHUP), by result: ok; rejected (the file was invalid, the running config stayed); failed (valid, but a part could not apply its section).",
		}, []string{"result"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_config_last_reload_successful",
			Help: "1 if the last config reload was applied whole (or none was asked for), 0 if it was rejected or failed.",
		}),
	}
	reg.MustRegister(m.reloads, m.lastOK)
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("rejected")
	m.reloads.WithLabelValues("failed")
	m.lastOK.Set(1)
	return m
}

// watchReloads reloads on each signal until ctx is done.
func (e *Env[C]) watchReloads(ctx context.Context, signals <-chan os.Signal, part file.Part, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-signals:
			e.reload(part)
		}
	}
}

func (e *Env[C]) reload(part file.Part) {
	if e.ConfigPath == "" {
		e.Logger.Warn("SIGHUP: no config file to reload (started without --config)")
		return
	}
	next, err := file.Load(e.ConfigPath, e.defaults())
	if err == nil {
		e.applyFlags(&next)
		err = next.Validate(part)
	}
	if err != nil {
		e.reloadMetrics.reloads.WithLabelValues("rejected").Inc()
		e.reloadMetrics.lastOK.Set(0)
		e.Logger.Error("config reload rejected; the running config stays", "file", e.ConfigPath, "err", err)
		return
	}
	e.reloadMu.Lock()
	hooks := append([]reloadHook[C](nil), e.hooks...)
	e.reloadMu.Unlock()

	applied := []string{}
	if e.flags.logLevel == "" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(next.Common().Log.Level)); err == nil {
			e.level.Set(level)
			applied = append(applied, "log.level")
		}
	}
	var failed []string
	for _, h := range hooks {
		if err := h.apply(next); err != nil {
			failed = append(failed, h.keys...)
			e.Logger.Error("config reload: applying failed; those keys keep their previous values", "keys", h.keys, "err", err)
			continue
		}
		applied = append(applied, h.keys...)
	}
	// The applied sections are applied whole on every reload; every other
	// key stays as the daemon started, so that is what a change is
	// measured against: a change stays pending, reload after reload, until
	// a restart.
	pending := restartKeys(e.started, next, part.Sections(), append(applied, failed...))
	if len(failed) > 0 {
		e.reloadMetrics.reloads.WithLabelValues("failed").Inc()
		e.reloadMetrics.lastOK.Set(0)
	} else {
		e.reloadMetrics.reloads.WithLabelValues("ok").Inc()
		e.reloadMetrics.lastOK.Set(1)
	}
	e.Logger.Info("config reloaded", "file", e.ConfigPath, "applied", applied, "failed", failed)
	if len(pending) > 0 {
		e.Logger.Warn("config changes that take effect only after a restart", "keys", pending)
	}
}

// secretsOf finds every secret in a config by its dotted key (through
// nested sections, not lists, as flatten keeps lists whole) and tells
// whether it is the same in both: the masked rendering hides a rotated
// password, which is a change that needs a restart too.
func secretsOf(prev, next reflect.Value, prefix string, out map[string]bool) {
	if prev.Type() == secretType {
		out[prefix] = prev.Interface().(secret.Value).Reveal() == next.Interface().(secret.Value).Reveal()
		return
	}
	switch prev.Kind() {
	case reflect.Pointer:
		if !prev.IsNil() && !next.IsNil() {
			secretsOf(prev.Elem(), next.Elem(), prefix, out)
		}
	case reflect.Struct:
		for i := 0; i < prev.NumField(); i++ {
			f := prev.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case f.Anonymous && name == "" && opts == "inline":
				secretsOf(prev.Field(i), next.Field(i), prefix, out)
			case name != "" && name != "-":
				secretsOf(prev.Field(i), next.Field(i), join(prefix, name), out)
			}
		}
	}
}

var secretType = reflect.TypeOf(secret.Value{})

// restartKeys lists the dotted keys of the part's sections whose values
// differ between two configs and that no applied prefix covers. Only key
// names are returned, never values.
func restartKeys[C Config](prev, next C, sections, applied []string) []string {
	a, b := flatten(prev), flatten(next)
	same := map[string]bool{}
	secretsOf(reflect.ValueOf(prev), reflect.ValueOf(next), "", same)
	for key, eq := range same {
		a[key], b[key] = eq, true
	}
	var out []string
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	for k := range seen {
		if reflect.DeepEqual(a[k], b[k]) || !covered(k, sections) || covered(k, applied) {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func covered(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if key == p || strings.HasPrefix(key, p+".") || strings.HasPrefix(key, p+"[") {
			return true
		}
	}
	return false
}

// flatten renders a config as dotted keys to values; lists stay whole.
func flatten[C Config](c C) map[string]any {
	out := map[string]any{}
	data, err := c.Redacted()
	if err != nil {
		return out
	}
	var tree map[string]any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return out
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, sub := range m {
				walk(join(prefix, k), sub)
			}
			return
		}
		out[prefix] = v
	}
	walk("", tree)
	return out
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return fmt.Sprintf("%s.%s", prefix, key)
}
