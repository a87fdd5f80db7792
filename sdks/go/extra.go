// Keeping the JSON fields a struct does not name: a newer server's fields survive a round trip
// through this client (decoded into Extra, encoded back out) instead of being dropped.
//
// encoding/json has no option for this, so each type's (Un)MarshalJSON goes through the two
// helpers below with a field-less copy of itself (`type plain T`), which avoids recursion.

package clarify

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Extra holds the JSON fields of an object that its Go type has no field for, as raw JSON.
type Extra map[string]json.RawMessage

var knownNames sync.Map // reflect.Type -> map[string]bool

// jsonNames is the set of JSON names the struct type t encodes.
func jsonNames(t reflect.Type) map[string]bool {
	if cached, ok := knownNames.Load(t); ok {
		return cached.(map[string]bool)
	}
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	knownNames.Store(t, names)
	return names
}

// decodeKeeping decodes data into plain (a pointer to a struct) and returns the fields the
// struct does not name.
func decodeKeeping(data []byte, plain any) (Extra, error) {
	if err := json.Unmarshal(data, plain); err != nil {
		return nil, err
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	known := jsonNames(reflect.TypeOf(plain).Elem())
	var extra Extra
	for name, value := range all {
		if known[name] {
			continue
		}
		if extra == nil {
			extra = Extra{}
		}
		extra[name] = value
	}
	return extra, nil
}

// encodeKeeping encodes plain (a struct) with the extra fields added, those the struct names
// winning.
func encodeKeeping(plain any, extra Extra) ([]byte, error) {
	data, err := json.Marshal(plain)
	if err != nil || len(extra) == 0 {
		return data, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	for name, value := range extra {
		if _, named := all[name]; !named {
			all[name] = value
		}
	}
	return json.Marshal(all)
}
