package ledger

import "reflect"

// deepCopy is a copy of *p that shares nothing a caller can change with
// it: every pointer, slice and map reachable through exported fields is
// copied. A struct's unexported fields are copied by value (time.Time's
// location, the only such field of a record, is immutable).
func deepCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	out := new(T)
	copyInto(reflect.ValueOf(out).Elem(), reflect.ValueOf(p).Elem())
	return out
}

// copyInto sets dst (settable) to a deep copy of src.
func copyInto(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		v := reflect.New(src.Type().Elem())
		copyInto(v.Elem(), src.Elem())
		dst.Set(v)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		v := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyInto(v.Index(i), src.Index(i))
		}
		dst.Set(v)
	case reflect.Array:
		for i := range src.Len() {
			copyInto(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		v := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			copyInto(k, it.Key())
			e := reflect.New(src.Type().Elem()).Elem()
			copyInto(e, it.Value())
			v.SetMapIndex(k, e)
		}
		dst.Set(v)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		copyInto(e, src.Elem())
		dst.Set(e)
	case reflect.Struct:
		dst.Set(src) // unexported fields by value
		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				copyInto(dst.Field(i), src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}
