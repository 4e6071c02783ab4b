// Package strict decodes YAML into config structs strictly: an unknown
// key, a key given twice or a value of the wrong kind is an error that
// names the full dotted key and its line.
package strict

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Decode decodes a YAML node into the value pointed to by out. Unlike
// yaml.v3's KnownFields, every error names the full dotted key
// ("worker.lock_ttl"), prefixed by path when the node is not the top of
// the file, and the line, which is what a person fixing a config file
// needs. Durations must be strings ("15s"): a bare number is ambiguous.
func Decode(n *yaml.Node, out any, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	return decodeValue(n, reflect.ValueOf(out).Elem(), path)
}

var (
	durationType    = reflect.TypeOf(time.Duration(0))
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

func keyError(path string, n *yaml.Node, format string, args ...any) error {
	if path == "" {
		path = "(top level)"
	}
	return fmt.Errorf("%s (line %d): %s", path, n.Line, fmt.Sprintf(format, args...))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func decodeValue(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	// An explicit null leaves the default in place.
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		if err := n.Decode(v.Addr().Interface()); err != nil {
			return keyError(path, n, "%s", cleanYAMLError(err))
		}
		return nil
	}
	switch {
	case v.Type() == durationType:
		return decodeDuration(n, v, path)
	case v.Kind() == reflect.Struct:
		return decodeStruct(n, v, path)
	case v.Kind() == reflect.Slice:
		return decodeSlice(n, v, path)
	case v.Kind() == reflect.Map:
		return decodeMap(n, v, path)
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decodeValue(n, v.Elem(), path)
	}
	if n.Kind != yaml.ScalarNode {
		return keyError(path, n, "expected a single value, got a %s", kindName(n))
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		return keyError(path, n, "%s", cleanYAMLError(err))
	}
	return nil
}

func decodeDuration(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return keyError(path, n, "duration must be a string with a unit, like \"15s\" or \"1h30m\", got %q", n.Value)
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		return keyError(path, n, "invalid duration %q (use a unit: ms, s, m, h)", n.Value)
	}
	v.SetInt(int64(d))
	return nil
}

func decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return keyError(path, n, "expected a mapping of keys, got a %s", kindName(n))
	}
	fields := map[string][]int{}
	structFields(v.Type(), nil, fields)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		idx, ok := fields[k.Value]
		if !ok {
			return keyError(key, k, "unknown key (known keys here: %s)", strings.Join(sortedKeys(fields), ", "))
		}
		if seen[k.Value] {
			return keyError(key, k, "key given twice")
		}
		seen[k.Value] = true
		if err := decodeValue(val, v.FieldByIndex(idx), key); err != nil {
			return err
		}
	}
	return nil
}

// structFields maps t's YAML keys to their fields' indexes. The keys of
// an embedded struct tagged `yaml:",inline"` are its parent's, as
// yaml.v3 has them: a section may take keys another package declares.
func structFields(t reflect.Type, index []int, out map[string][]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		idx := append(append([]int(nil), index...), i)
		switch {
		case f.Anonymous && name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			structFields(f.Type, idx, out)
		case name != "" && name != "-":
			out[name] = idx
		}
	}
}

func decodeSlice(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.SequenceNode {
		return keyError(path, n, "expected a list, got a %s", kindName(n))
	}
	if len(n.Content) == 0 {
		v.SetZero() // "[]" and an absent key mean the same
		return nil
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		if err := decodeValue(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	v.Set(out)
	return nil
}

func decodeMap(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return keyError(path, n, "expected a mapping, got a %s", kindName(n))
	}
	if v.Type().Key().Kind() != reflect.String {
		return keyError(path, n, "unsupported map key type %s", v.Type().Key())
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := decodeValue(val, elem, join(path, k.Value)); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "value " + strconv.Quote(n.Value)
	}
	return "node"
}

// cleanYAMLError drops yaml.v3's "yaml: unmarshal errors:\n  line N:" prefix;
// the caller already names the key and line.
func cleanYAMLError(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "line ") {
			msg = msg[i+2:]
		}
		return msg
	}
	return err.Error()
}

func sortedKeys(m map[string][]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
