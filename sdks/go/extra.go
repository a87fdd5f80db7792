// Keeping the JSON fields a struct does not name: a newer server's fields survive a round trip
// through this client (decoded into Extra, encoded back out) instead of being dropped.
//
// encoding/json has no option for this, so each type's (Un)MarshalJSON goes through the two
// helpers below with a field-less copy of itself (`type plain T`), which avoids recursion.

package clarify

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Extra holds the JSON fields of an object that its Go type has no field for, as raw JSON.
type Extra map[string]json.RawMessage

var fieldsByType sync.Map // reflect.Type -> map[string]int

// jsonFields maps the JSON names the struct type t decodes to its fields' indexes.
func jsonFields(t reflect.Type) map[string]int {
	if cached, ok := fieldsByType.Load(t); ok {
		return cached.(map[string]int)
	}
	fields := map[string]int{}
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
		fields[name] = i
	}
	fieldsByType.Store(t, fields)
	return fields
}

// decodeKeeping decodes data into plain (a pointer to a struct) and returns the fields the
// struct does not name. The object is split into its fields once and each field decoded from
// its own bytes, so nested types keeping their Extra do not decode their subtrees twice.
func decodeKeeping(data []byte, plain any) (Extra, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		// Not an object: the struct's own decoding says what is wrong.
		return nil, json.Unmarshal(data, plain)
	}
	v := reflect.ValueOf(plain).Elem()
	fields := jsonFields(v.Type())
	var extra Extra
	for name, raw := range all {
		i, known := fields[name]
		if !known {
			if extra == nil {
				extra = Extra{}
			}
			extra[name] = raw
			continue
		}
		f := v.Field(i)
		if err := json.Unmarshal(raw, f.Addr().Interface()); err != nil {
			return nil, fmt.Errorf("field %s: %w", name, err)
		}
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
