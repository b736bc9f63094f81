package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/postline/postline/internal/apperr"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) //nolint:errcheck // the client went away
}

// decodeJSON reads a JSON object body into dst. Size overruns come back as
// *http.MaxBytesError (413); anything else unreadable is a 422 naming body.
func decodeJSON(r *http.Request, dst any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return tooLargeOr(err, apperr.Field("body", "could not read the request body"))
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return apperr.Field("body", "request body must be a JSON object")
	}
	if err := json.Unmarshal(data, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return apperr.Field(te.Field, "must be a "+jsonType(te.Type.Kind().String()))
		}
		return apperr.Field("body", "request body is not valid JSON")
	}
	return nil
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	default:
		return "number"
	}
}

func fieldRequired(field string) error {
	return apperr.Field(field, "The "+field+" field is required.")
}

// tooLargeOr is err when reading the body stopped at its limit (the 413
// writeError gives *http.MaxBytesError), else otherwise.
func tooLargeOr(err error, otherwise error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return otherwise
}
