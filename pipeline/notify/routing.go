package notify

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Routing is the `worker.routing:` section: which receivers get a
// crossing. Routes are tried in order; the first that matches takes the
// crossing (its child routes are tried in turn, and if none of them
// matches, the route's own receivers get it), unless it says continue,
// in which case later routes are tried too and every match adds its
// receivers. A crossing no route takes goes to Receivers, the default.
//
// A crossing whose rule names receivers (crossing.Receivers) skips the
// routing: it goes to exactly those.
type Routing struct {
	Receivers []string `yaml:"receivers"`
	Routes    []Route  `yaml:"routes"`
}

// Route is one node of the routing tree.
type Route struct {
	Match     crossing.Match `yaml:"match"`
	Receivers []string       `yaml:"receivers"`
	// Continue: after this route matches, later routes are tried too.
	Continue bool    `yaml:"continue"`
	Routes   []Route `yaml:"routes"`
}

// DefaultRouting sends everything to the default email receiver.
func DefaultRouting() Routing { return Routing{Receivers: []string{DefaultReceiver}} }

// Route returns the receivers for x, each once, in the order first named.
func (r Routing) Route(x crossing.Crossing) []string {
	if len(x.Receivers) > 0 {
		return dedup(x.Receivers)
	}
	got, ok := routeAll(r.Routes, x)
	if !ok {
		return dedup(r.Receivers)
	}
	return dedup(got)
}

// routeAll walks routes in order; ok reports whether any matched.
func routeAll(routes []Route, x crossing.Crossing) (out []string, ok bool) {
	for _, rt := range routes {
		if !rt.Match.Matches(x) {
			continue
		}
		ok = true
		if sub, matched := routeAll(rt.Routes, x); matched {
			out = append(out, sub...)
		} else {
			out = append(out, rt.Receivers...)
		}
		if !rt.Continue {
			break
		}
	}
	return out, ok
}

func dedup(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Validate checks the tree against the receivers that exist; prefix is
// the section's key ("worker.routing").
func (r Routing) Validate(prefix string, known []string) error {
	var errs []error
	if len(r.Receivers) == 0 {
		errs = append(errs, fmt.Errorf("%s.receivers: the default receivers must be set", prefix))
	}
	errs = append(errs, checkNames(prefix+".receivers", r.Receivers, known))
	errs = append(errs, validateRoutes(prefix+".routes", r.Routes, known, 1))
	return errors.Join(errs...)
}

const maxRouteDepth = 8

func validateRoutes(key string, routes []Route, known []string, depth int) error {
	if depth > maxRouteDepth && len(routes) > 0 {
		return fmt.Errorf("%s: routes nest deeper than %d", key, maxRouteDepth)
	}
	var errs []error
	for i, rt := range routes {
		k := fmt.Sprintf("%s[%d]", key, i)
		errs = append(errs, rt.Match.Validate(k+".match"), checkNames(k+".receivers", rt.Receivers, known))
		if len(rt.Receivers) == 0 && len(rt.Routes) == 0 {
			errs = append(errs, fmt.Errorf("%s: names no receivers and has no routes", k))
		}
		errs = append(errs, validateRoutes(k+".routes", rt.Routes, known, depth+1))
	}
	return errors.Join(errs...)
}

func checkNames(key string, names, known []string) error {
	var errs []error
	for _, n := range names {
		if !slices.Contains(known, n) {
			errs = append(errs, fmt.Errorf("%s: no receiver named %q (receivers: %s)", key, n, strings.Join(known, ", ")))
		}
	}
	return errors.Join(errs...)
}
