package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// timesHolder has every place a time or a duration sits in a message: a value, a pointer, and
// inside apimachinery's own types.
type timesHolder struct {
	At       metav1.Time                    `json:"at"`
	Since    *metav1.Time                   `json:"since"`
	For      metav1.Duration                `json:"for"`
	Window   *metav1.Duration               `json:"window"`
	Items    []metricsapi.PodMetrics        `json:"items"`
	Cond     []metav1.Condition             `json:"cond"`
	ByName   map[string]metav1.Time         `json:"byName"`
	Optional map[string]*metav1.Duration    `json:"optional"`
	Nested   struct{ At metav1.Time }       `json:"nested"`
	Raw      map[string]json.RawMessage     `json:"raw"`
	Lists    map[string][]metav1.Condition  `json:"lists"`
	Meta     metav1.ObjectMeta              `json:"metadata"`
	Pointers []*metav1.Time                 `json:"pointers"`
	Any      map[string]interface{}         `json:"any"`
	Zones    map[string]metav1.Time         `json:"zones"`
	Empty    metav1.Time                    `json:"empty"`
	Missing  *metav1.Duration               `json:"missing"`
	Values   map[string]metav1.Duration     `json:"values"`
	Stamps   []metav1.Time                  `json:"stamps"`
	Windows  []metav1.Duration              `json:"windows"`
	Nil      *metav1.Time                   `json:"nil"`
	Fraction metav1.Time                    `json:"fraction"`
	Other    map[string]map[string]struct{} `json:"other"`
}

// The codec reads times and durations exactly as encoding/json (through their UnmarshalJSON
// methods) does: the same values, and an error where it errs.
func TestTimesAndDurationsDecodeAsTheirOwnMethodsDo(t *testing.T) {
	accepted := []string{
		`{}`,
		`{"at":"2000-01-01T00:00:00Z","since":"2000-01-01T00:00:15Z","for":"30s","window":"1m30.5s"}`,
		`{"at":null,"since":null,"window":null,"nil":null,"empty":null}`,
		`{"at":"2000-01-01T01:02:03+02:00","fraction":"2000-01-01T00:00:00.123456789Z","zones":{"a":"1999-12-31T23:59:59-05:30"}}`,
		`{"items":[{"metadata":{"name":"web-0","namespace":"default","creationTimestamp":"2000-01-01T00:00:00Z"},"timestamp":"2000-01-01T00:00:00Z","window":"30s","containers":[{"name":"app","usage":{"cpu":"1193m"}}]}]}`,
		`{"items":[{"metadata":{"name":"web-0"},"timestamp":null,"window":"0s","containers":[]}]}`,
		`{"cond":[{"type":"Ready","status":"True","lastTransitionTime":"2000-01-01T00:00:05Z","reason":"R","message":"m"}]}`,
		`{"byName":{"a":"2000-01-01T00:00:00Z","b":null},"optional":{"a":"15s","b":null},"values":{"x":"-1h2m"}}`,
		`{"nested":{"At":"2000-02-29T12:00:00Z"},"stamps":["2000-01-01T00:00:00Z",null],"windows":["1ns","2h"],"pointers":["2000-01-01T00:00:00Z",null]}`,
		`{"raw":{"t":"2000-01-01T00:00:00Z"},"any":{"t":"2000-01-01T00:00:00Z"},"lists":{"a":[{"lastTransitionTime":"2000-01-01T00:00:00Z"}]}}`,
		`{"metadata":{"creationTimestamp":"2000-01-01T00:00:00Z","deletionTimestamp":"2000-01-01T00:01:00Z","name":"x"}}`,
		`{"at":"2000-01-01T00:00:00\u005a","for":"3\u0030s"}`,
		` { "at" : "2000-01-01T00:00:00Z" , "for" : "1s" } `,
	}
	for _, in := range accepted {
		var want, got timesHolder
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("encoding/json refused %s: %v", in, err)
		}
		if err := Decode([]byte(in), &got); err != nil {
			t.Fatalf("the codec refused %s: %v", in, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s:\n encoding/json %+v\n codec         %+v", in, want, got)
		}
	}

	refused := []struct{ in, says string }{
		{`{"at":"yesterday"}`, `parsing time "yesterday"`},
		{`{"at":"2000-01-01 00:00:00Z"}`, `parsing time`},
		{`{"at":"2000-01-01T00:00:00"}`, `parsing time`},
		{`{"at":12}`, `cannot unmarshal number`},
		{`{"at":{"x":1}}`, `cannot unmarshal object`},
		{`{"since":true}`, `cannot unmarshal bool`},
		{`{"for":"30"}`, `missing unit in duration`},
		{`{"for":""}`, `invalid duration`},
		{`{"for":null}`, `invalid duration`},
		{`{"window":30}`, `cannot unmarshal number`},
		{`{"items":[{"timestamp":"now"}]}`, `parsing time "now"`},
		{`{"items":[{"window":"soon"}]}`, `invalid duration`},
		{`{"windows":[null]}`, `invalid duration`},
	}
	for _, c := range refused {
		var want, got timesHolder
		wantErr := json.Unmarshal([]byte(c.in), &want)
		gotErr := Decode([]byte(c.in), &got)
		if wantErr == nil || gotErr == nil {
			t.Errorf("%s: encoding/json error %v, codec error %v; want both to refuse it", c.in, wantErr, gotErr)
			continue
		}
		if !strings.Contains(wantErr.Error(), c.says) || !strings.Contains(gotErr.Error(), c.says) {
			t.Errorf("%s: want both errors to say %q:\n encoding/json %v\n codec         %v", c.in, c.says, wantErr, gotErr)
		}
	}
}
