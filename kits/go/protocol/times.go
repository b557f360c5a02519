package protocol

// Reading metav1.Time and metav1.Duration without a second JSON decoder. Their UnmarshalJSON
// methods hand each timestamp to encoding/json.Unmarshal only to unquote a string, and a tick
// carries one per pod, per metrics API item and per condition: that detour was a fifth of
// decoding a tick in the upstream adapter. For a JSON string (every value the harness sends)
// these decoders take the string from the codec's own iterator and do what the method does
// with it — time.Parse with RFC 3339 then Local, time.ParseDuration — so the value and the
// parse error are the method's own. Anything else (null, a number, an object) goes to the
// method itself, as before: a null Time is the zero time, a null Duration the method's error.

import (
	"reflect"
	"time"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apimachineryTimes gives the codec the two decoders (registered on it alone, not on
// json-iterator's shared configurations that other packages use).
type apimachineryTimes struct{ jsoniter.DummyExtension }

var (
	timeType     = reflect.TypeOf(metav1.Time{})
	durationType = reflect.TypeOf(metav1.Duration{})
)

// CreateDecoder answers for metav1.Time and metav1.Duration (a pointer to either is decoded by
// the codec's optional decoder around these, which keeps null a nil pointer as before).
func (*apimachineryTimes) CreateDecoder(typ reflect2.Type) jsoniter.ValDecoder {
	switch typ.Type1() {
	case timeType:
		return timeDecoder{}
	case durationType:
		return durationDecoder{}
	}
	return nil
}

type timeDecoder struct{}

func (timeDecoder) Decode(ptr unsafe.Pointer, iter *jsoniter.Iterator) {
	t := (*metav1.Time)(ptr)
	fromString(iter, t, func(s string) error {
		pt, err := time.Parse(time.RFC3339, s)
		if err == nil {
			t.Time = pt.Local()
		}
		return err
	})
}

type durationDecoder struct{}

func (durationDecoder) Decode(ptr unsafe.Pointer, iter *jsoniter.Iterator) {
	d := (*metav1.Duration)(ptr)
	fromString(iter, d, func(s string) error {
		pd, err := time.ParseDuration(s)
		if err == nil {
			d.Duration = pd
		}
		return err
	})
}

// fromString decodes the next value into v: a JSON string through parse (what v's UnmarshalJSON
// does with the string once unquoted), anything else through v's UnmarshalJSON itself.
func fromString(iter *jsoniter.Iterator, v interface{ UnmarshalJSON([]byte) error }, parse func(string) error) {
	if iter.WhatIsNext() != jsoniter.StringValue {
		unmarshalRaw(iter, v)
		return
	}
	s := iter.ReadString()
	if iter.Error != nil {
		return
	}
	if err := parse(s); err != nil {
		iter.ReportError("unmarshalerDecoder", err.Error())
	}
}

// unmarshalRaw hands the next value to v's own UnmarshalJSON, as the codec does for any type
// with one.
func unmarshalRaw(iter *jsoniter.Iterator, v interface{ UnmarshalJSON([]byte) error }) {
	raw := iter.SkipAndReturnBytes()
	if iter.Error != nil {
		return
	}
	if err := v.UnmarshalJSON(raw); err != nil {
		iter.ReportError("unmarshalerDecoder", err.Error())
	}
}
