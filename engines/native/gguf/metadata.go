package gguf

import (
	"fmt"
	"math"
)

// Value is one typed metadata value. For arrays, Type is TypeArray, ElemType
// the element type and Array the elements.
type Value struct {
	Type     ValueType
	ElemType ValueType
	Scalar   any // uint8..float64, bool or string for scalar types
	Array    []any
}

// KV is one metadata key and its value, in file order.
type KV struct {
	Key   string
	Value Value
}

// Typed constructors keep the writer's metadata types strict: llama.cpp
// checks that counts are uint32 and epsilons float32.

// U32 is a uint32 value.
func U32(v uint32) Value { return Value{Type: TypeUint32, Scalar: v} }

// I32 is an int32 value.
func I32(v int32) Value { return Value{Type: TypeInt32, Scalar: v} }

// U64 is a uint64 value.
func U64(v uint64) Value { return Value{Type: TypeUint64, Scalar: v} }

// F32 is a float32 value.
func F32(v float32) Value { return Value{Type: TypeFloat32, Scalar: v} }

// F64 is a float64 value.
func F64(v float64) Value { return Value{Type: TypeFloat64, Scalar: v} }

// Bool is a bool value.
func Bool(v bool) Value { return Value{Type: TypeBool, Scalar: v} }

// Str is a string value.
func Str(v string) Value { return Value{Type: TypeString, Scalar: v} }

// Strings is an array of strings.
func Strings(v []string) Value {
	a := make([]any, len(v))
	for i, s := range v {
		a[i] = s
	}
	return Value{Type: TypeArray, ElemType: TypeString, Array: a}
}

// Float32s is an array of float32.
func Float32s(v []float32) Value {
	a := make([]any, len(v))
	for i, s := range v {
		a[i] = s
	}
	return Value{Type: TypeArray, ElemType: TypeFloat32, Array: a}
}

// Int32s is an array of int32.
func Int32s(v []int32) Value {
	a := make([]any, len(v))
	for i, s := range v {
		a[i] = s
	}
	return Value{Type: TypeArray, ElemType: TypeInt32, Array: a}
}

// Metadata is the ordered key/value section of a file.
type Metadata []KV

// Get returns the value stored under key.
func (m Metadata) Get(key string) (Value, bool) {
	for _, kv := range m {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return Value{}, false
}

// KeyError is a metadata key that is missing or has the wrong type.
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string { return fmt.Sprintf("gguf: metadata %s: %s", e.Key, e.Msg) }

// String returns a string value.
func (m Metadata) String(key string) (string, error) {
	v, ok := m.Get(key)
	if !ok {
		return "", &KeyError{key, "missing"}
	}
	s, ok := v.Scalar.(string)
	if !ok || v.Type != TypeString {
		return "", &KeyError{key, fmt.Sprintf("is %s, want string", v.Type)}
	}
	return s, nil
}

// Uint returns any integer value as uint64; negative values are an error.
func (m Metadata) Uint(key string) (uint64, error) {
	v, ok := m.Get(key)
	if !ok {
		return 0, &KeyError{key, "missing"}
	}
	switch x := v.Scalar.(type) {
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	case int8, int16, int32, int64:
		n := toInt64(x)
		if n < 0 {
			return 0, &KeyError{key, fmt.Sprintf("is negative (%d)", n)}
		}
		return uint64(n), nil
	}
	return 0, &KeyError{key, fmt.Sprintf("is %s, want an integer", v.Type)}
}

// Float returns a float32 or float64 value.
func (m Metadata) Float(key string) (float64, error) {
	v, ok := m.Get(key)
	if !ok {
		return 0, &KeyError{key, "missing"}
	}
	switch x := v.Scalar.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, &KeyError{key, fmt.Sprintf("is %s, want a float", v.Type)}
}

// BoolOr returns a bool value, or def when the key is absent.
func (m Metadata) BoolOr(key string, def bool) bool {
	v, ok := m.Get(key)
	if !ok {
		return def
	}
	b, ok := v.Scalar.(bool)
	if !ok {
		return def
	}
	return b
}

// StringArray returns an array of strings.
func (m Metadata) StringArray(key string) ([]string, error) {
	v, ok := m.Get(key)
	if !ok {
		return nil, &KeyError{key, "missing"}
	}
	if v.Type != TypeArray || v.ElemType != TypeString {
		return nil, &KeyError{key, fmt.Sprintf("is %s of %s, want array of string", v.Type, v.ElemType)}
	}
	out := make([]string, len(v.Array))
	for i, e := range v.Array {
		out[i] = e.(string)
	}
	return out, nil
}

// FloatArray returns a numeric array as float32.
func (m Metadata) FloatArray(key string) ([]float32, error) {
	v, ok := m.Get(key)
	if !ok {
		return nil, &KeyError{key, "missing"}
	}
	if v.Type != TypeArray {
		return nil, &KeyError{key, fmt.Sprintf("is %s, want array", v.Type)}
	}
	out := make([]float32, len(v.Array))
	for i, e := range v.Array {
		switch x := e.(type) {
		case float32:
			out[i] = x
		case float64:
			out[i] = float32(x)
		default:
			return nil, &KeyError{key, fmt.Sprintf("element type %s, want float", v.ElemType)}
		}
	}
	return out, nil
}

// IntArray returns an integer array as int64.
func (m Metadata) IntArray(key string) ([]int64, error) {
	v, ok := m.Get(key)
	if !ok {
		return nil, &KeyError{key, "missing"}
	}
	if v.Type != TypeArray {
		return nil, &KeyError{key, fmt.Sprintf("is %s, want array", v.Type)}
	}
	out := make([]int64, len(v.Array))
	for i, e := range v.Array {
		switch x := e.(type) {
		case uint8, uint16, uint32, uint64, int8, int16, int32, int64:
			out[i] = toInt64(x)
		default:
			return nil, &KeyError{key, fmt.Sprintf("element type %s, want integer", v.ElemType)}
		}
	}
	return out, nil
}

func toInt64(x any) int64 {
	switch v := x.(type) {
	case uint8:
		return int64(v)
	case int8:
		return int64(v)
	case uint16:
		return int64(v)
	case int16:
		return int64(v)
	case uint32:
		return int64(v)
	case int32:
		return int64(v)
	case uint64:
		if v > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(v)
	case int64:
		return v
	}
	return 0
}
