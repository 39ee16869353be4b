// Package jsontest holds what tests of a JSON codec share: random values
// whose encodings exercise every rule encoding/json has, so another codec
// can be held to encoding/json on them.
package jsontest

import (
	"math"
	"math/rand"
	"reflect"
	"time"
)

// Fill sets every exported field reachable from v (addressable) to a
// random value: strings with escapes, HTML characters, control bytes,
// non-ASCII, U+2028 and invalid UTF-8; floats across the exponent range
// (finite: encoding/json refuses the rest); integers of every width; times
// with nanoseconds or zero; present and absent pointers, slices and maps.
func Fill(r *rand.Rand, v reflect.Value) { f := filler{r: r}; f.fill(v, 0) }

// FillNonFinite is Fill with floats of any bit pattern, NaN and infinities
// included: for encoders that must refuse what encoding/json refuses.
func FillNonFinite(r *rand.Rand, v reflect.Value) { f := filler{r: r, nonFinite: true}; f.fill(v, 0) }

type filler struct {
	r         *rand.Rand
	nonFinite bool
}

func (fl filler) fill(v reflect.Value, depth int) {
	r := fl.r
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 || r.Intn(4) == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fl.fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if r.Intn(5) > 0 {
				v.Set(reflect.ValueOf(time.Unix(r.Int63n(4e9), r.Int63n(1e9)).UTC()))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fl.fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if depth > 4 || r.Intn(3) == 0 {
			return
		}
		n := r.Intn(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fl.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth > 4 || r.Intn(3) == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := r.Intn(4); i > 0; i-- {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fl.fill(k, depth+1)
			fl.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		pieces := []string{"", "a", "0xAbC", "Ξ", "<b>", "&amp;", `"`, `\`, "\b\f\n\r\t", "\x00\x1f\x7f", "\u2028\u2029", "\xff", "\xe2\x80", "コ", "😀", "/", " "}
		s := ""
		for i := r.Intn(5); i > 0; i-- {
			s += pieces[r.Intn(len(pieces))]
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.Uint64()) >> (64 - uint(v.Type().Bits())))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(r.Uint64() >> (64 - uint(v.Type().Bits())))
	case reflect.Float32, reflect.Float64:
		f := []float64{0, math.Copysign(0, -1), 1, -1, 1e-6, 9.99999e-7, 1e-7, 1e21, 123456789.123, math.SmallestNonzeroFloat64, math.MaxFloat64}[r.Intn(11)]
		switch {
		case fl.nonFinite && r.Intn(6) == 0:
			f = math.Float64frombits(r.Uint64()) // any bit pattern: NaN and infinities too
		case r.Intn(2) == 0:
			f = math.Ldexp(r.Float64(), r.Intn(200)-100) * float64(1-2*r.Intn(2))
		}
		v.SetFloat(f)
	}
}
