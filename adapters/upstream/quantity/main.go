// Command hpa-quantity prints what apimachinery's resource.Quantity (the version pinned in
// ../go.mod) makes of quantity spellings, for the reference's differential test
// (tests/quantity_upstream.rs).
//
// Input, on stdin: one JSON string per line (so that empty strings, whitespace and any other text
// can be written). Output, on stdout: one JSON object per input line, in order, flushed after each:
//
//	{"in": <the string>, "parse": <result>, "json": <result>}
//
// "parse" is ParseQuantity(<the string>); "json" is json.Unmarshal of the input line itself into a
// Quantity (UnmarshalJSON: the quotes stripped from the raw JSON text, escapes left as they are,
// strings.TrimSpace, then ParseQuantity), the path a manifest's quantity takes through the API
// server and a protocol message's through the upstream adapter. A result is either
//
//	{"error": <the error's text>}
//
// or the parsed quantity's
//
//	{"milli": MilliValue(), "value": Value(), "float": AsApproximateFloat64() as Go's shortest
//	 'g' text (+Inf, -Inf, NaN spelled so), "sign": Sign(), "string": String()}
//
// An input line that is not a JSON string is a usage error (exit status 2).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// result is one reading of a spelling: an error, or the quantity's conversions.
type result struct {
	Error  *string `json:"error,omitempty"`
	Milli  *int64  `json:"milli,omitempty"`
	Value  *int64  `json:"value,omitempty"`
	Float  *string `json:"float,omitempty"`
	Sign   *int    `json:"sign,omitempty"`
	String *string `json:"string,omitempty"`
}

// line is the answer for one input line.
type line struct {
	In    string `json:"in"`
	Parse result `json:"parse"`
	JSON  result `json:"json"`
}

// read turns a parsed quantity, or its error, into a result. Each conversion is taken on its own
// copy, so that String()'s cached text cannot influence another.
func read(q resource.Quantity, err error) result {
	if err != nil {
		text := err.Error()
		return result{Error: &text}
	}
	a, b, c, d, e := q.DeepCopy(), q.DeepCopy(), q.DeepCopy(), q.DeepCopy(), q.DeepCopy()
	milli := a.MilliValue()
	value := b.Value()
	float := strconv.FormatFloat(c.AsApproximateFloat64(), 'g', -1, 64)
	sign := d.Sign()
	text := e.String()
	return result{Milli: &milli, Value: &value, Float: &float, Sign: &sign, String: &text}
}

func run(in io.Reader, out io.Writer) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 0, 1<<16), 1<<26)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for n := 1; scanner.Scan(); n++ {
		raw := scanner.Bytes()
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("line %d is not a JSON string: %w", n, err)
		}
		parsed, parseErr := resource.ParseQuantity(s)
		var decoded resource.Quantity
		jsonErr := json.Unmarshal(raw, &decoded)
		if err := enc.Encode(line{In: s, Parse: read(parsed, parseErr), JSON: read(decoded, jsonErr)}); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return scanner.Err()
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: hpa-quantity < spellings (one JSON string per line)")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hpa-quantity:", err)
		os.Exit(2)
	}
}
