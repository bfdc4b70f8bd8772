// Command podschema prints the Go types of upstream's internal core.Pod as JSON: for each
// type its kind and, for structs, every field in declaration order with its Go type and the
// v1 JSON name it is decoded from. lib/config/upstream_uid.ts walks it to print go-spew's
// dump of a static pod, which upstream's static pod UID is a hash of. Regenerate with the
// Kubernetes version of this go.mod:
//
//	cd tools/e2e && go run ./podschema > ../../lib/config/internal_pod_types.json
package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
)

type desc struct {
	K   string  `json:"k"`
	E   string  `json:"e,omitempty"`
	Key string  `json:"key,omitempty"`
	F   [][]any `json:"f,omitempty"`
}

var types = map[string]*desc{}

var special = map[string]string{
	"resource.Quantity":  "quantity",
	"v1.Time":            "time",
	"intstr.IntOrString": "intstr",
}

func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name := strings.Split(tag, ",")[0]
	inline := strings.Contains(tag, ",inline") || (f.Anonymous && name == "")
	if name == "" {
		name = f.Name
	}
	return name, inline
}

// walk records internal type t; v is the v1 counterpart (may be nil).
func walk(t reflect.Type, v reflect.Type) string {
	name := t.String()
	if _, ok := types[name]; ok {
		return name
	}
	if s, ok := special[name]; ok {
		types[name] = &desc{K: s}
		return name
	}
	d := &desc{}
	types[name] = d
	elem := func(x reflect.Type) reflect.Type {
		if x == nil {
			return nil
		}
		switch x.Kind() {
		case reflect.Ptr, reflect.Slice, reflect.Map, reflect.Array:
			return x.Elem()
		}
		return x
	}
	switch t.Kind() {
	case reflect.Struct:
		d.K = "struct"
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			var vf reflect.Type
			var jn any = nil
			inline := false
			if v != nil && v.Kind() == reflect.Struct {
				if g, ok := v.FieldByName(f.Name); ok && len(g.Index) == 1 {
					vf = g.Type
					n, in := jsonName(g)
					jn, inline = n, in
				}
			}
			if f.PkgPath != "" { // unexported
				jn = nil
			}
			d.F = append(d.F, []any{f.Name, jn, walk(f.Type, vf), inline})
		}
	case reflect.Ptr:
		d.K = "ptr"
		d.E = walk(t.Elem(), elem(v))
	case reflect.Slice:
		d.K = "slice"
		d.E = walk(t.Elem(), elem(v))
	case reflect.Map:
		d.K = "map"
		d.Key = walk(t.Key(), nil)
		d.E = walk(t.Elem(), elem(v))
	case reflect.String:
		d.K = "string"
	case reflect.Bool:
		d.K = "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.K = "int"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d.K = "uint"
	default:
		d.K = "unsupported:" + t.Kind().String()
	}
	return name
}

func main() {
	root := walk(reflect.TypeOf(&api.Pod{}), reflect.TypeOf(&v1.Pod{}))
	out, _ := json.Marshal(map[string]any{"root": root, "types": types})
	os.Stdout.Write(out)
}
