package validation

import (
	"encoding/json"
	"time"
)

// MarshalJSON renders the API's form of a result: the tagged fields plus
// validated_at as RFC 3339 UTC with milliseconds. The endpoints and
// `postline validate` print the same JSON.
func (r Result) MarshalJSON() ([]byte, error) {
	type fields Result // without this method
	return json.Marshal(struct {
		fields
		ValidatedAt string `json:"validated_at"`
	}{fields(r), r.ValidatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")})
}

var _ json.Marshaler = Result{}

// UnmarshalJSON reads what MarshalJSON wrote, validated_at included (a
// stored result, such as a list-cleaning job's, keeps its time).
func (r *Result) UnmarshalJSON(b []byte) error {
	type fields Result // without this method
	var v struct {
		fields
		ValidatedAt string `json:"validated_at"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Result(v.fields)
	if v.ValidatedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, v.ValidatedAt)
		if err != nil {
			return err
		}
		r.ValidatedAt = t
	}
	return nil
}
