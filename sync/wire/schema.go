package wire

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"
)

// schema lists, for each object in a message, the field names it may hold:
// keyed by the object's path with array indices dropped ("" for the frame,
// "events", "events.job", ...). Decode checks keys against it exactly,
// where encoding/json would match them regardless of case.
type schema map[string][]string

// schemas holds the schema of every message type, built once from the
// types' json tags so it cannot drift from them.
var schemas = func() map[string]schema {
	out := make(map[string]schema, len(newMessage))
	for t, mk := range newMessage {
		s := schema{"": {"type"}}
		s.add("", reflect.TypeOf(mk()).Elem())
		out[t] = s
	}
	return out
}()

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// add records the fields of struct type t at path, and of the structs
// below it.
func (s schema) add(path string, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s[path] = append(s[path], name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || (ft.Kind() == reflect.Slice && ft != rawType) {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != timeType {
			s.add(join(path, name), ft)
		}
	}
	slices.Sort(s[path])
}

// has reports whether the object at path may hold key; ok is false when
// path is not an object of the message (its own key was refused already,
// or its value has the wrong JSON type, which decoding reports).
func (s schema) has(path, key string) (known, ok bool) {
	names, ok := s[path]
	if !ok {
		return false, false
	}
	_, found := slices.BinarySearch(names, key)
	return found, true
}

// join appends a field name to a path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
