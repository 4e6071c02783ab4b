package file

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var durationType = reflect.TypeOf(time.Duration(0))

var marshalerType = reflect.TypeOf((*yaml.Marshaler)(nil)).Elem()

// encodeNode renders a config value the way a person writes it: durations
// as "15s" (yaml.v3 would print nanoseconds), secrets masked (through
// their MarshalYAML), keys in declaration order.
func encodeNode(v reflect.Value) (*yaml.Node, error) {
	if v.Type().Implements(marshalerType) {
		out, err := v.Interface().(yaml.Marshaler).MarshalYAML()
		if err != nil {
			return nil, err
		}
		v = reflect.ValueOf(out)
	}
	switch {
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return scalar("null", "!!null"), nil
		}
		return encodeNode(v.Elem())
	case v.Type() == durationType:
		return scalar(formatDuration(v.Interface().(time.Duration)), "!!str"), nil
	case v.Kind() == reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		if err := encodeFields(v, n); err != nil {
			return nil, err
		}
		return n, nil
	case v.Kind() == reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for i := 0; i < v.Len(); i++ {
			val, err := encodeNode(v.Index(i))
			if err != nil {
				return nil, err
			}
			if val.Kind != yaml.ScalarNode {
				n.Style = 0
			}
			n.Content = append(n.Content, val)
		}
		return n, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(v.Interface()); err != nil {
		return nil, err
	}
	return n, nil
}

// encodeFields appends struct v's keys to n; an embedded struct tagged
// `yaml:",inline"` gives its keys in its place, as strict decodes them.
func encodeFields(v reflect.Value, n *yaml.Node) error {
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Anonymous && name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			if err := encodeFields(v.Field(i), n); err != nil {
				return err
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		val, err := encodeNode(v.Field(i))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		n.Content = append(n.Content, scalar(name, "!!str"), val)
	}
	return nil
}

// formatDuration writes 72h rather than 72h0m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func scalar(value, tag string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: value, Tag: tag}
}
