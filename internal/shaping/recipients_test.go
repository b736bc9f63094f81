package shaping

import (
	"strings"
	"testing"
)

// TestMaxRecipientsPerTransactionLoads: the key is read at the default,
// provider, domain and source levels like max_deliveries_per_connection,
// each more specific section over the one before, and a value that is not
// a whole number of at least 1 names its line.
func TestMaxRecipientsPerTransactionLoads(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `["default"]
max_recipients_per_transaction = 40

[provider."bigmail"]
match = [{MXSuffix = ".bigmail.example"}]
max_recipients_per_transaction = 100

["small.example"]
max_recipients_per_transaction = 1

["small.example".sources."ip-2"]
max_recipients_per_transaction = 5
`)
	if err != nil {
		t.Fatal(err)
	}
	if u := r.Unimplemented(); len(u) != 0 {
		t.Errorf("Unimplemented() = %q, want the key known", u)
	}
	for _, c := range []struct {
		domain, mx, source string
		want               int
	}{
		{"any.example", "mx.any.example", "", 40},
		{"user.example", "in.bigmail.example", "", 100},
		{"small.example", "mx.small.example", "", 1},
		{"small.example", "mx.small.example", "ip-2", 5},
	} {
		s := r.For(c.domain, []string{c.mx}, c.source)
		if s.MaxRecipientsPerTransaction != c.want {
			t.Errorf("%s at %s through %q: max_recipients_per_transaction %d, want %d", c.domain, c.mx, c.source,
				s.MaxRecipientsPerTransaction, c.want)
		}
	}
	got := ""
	for _, kv := range r.For("user.example", []string{"in.bigmail.example"}, "").KeyValues() {
		if kv.Key == "max_recipients_per_transaction" {
			got = kv.Value
		}
	}
	if got != "100" {
		t.Errorf("KeyValues shows max_recipients_per_transaction %q, want 100", got)
	}

	_, err = loadText(t, "[\"default\"]\nconnection_limit = 3\nmax_recipients_per_transaction = 0\n")
	if err == nil || !strings.Contains(err.Error(), ":3") || !strings.Contains(err.Error(), "max_recipients_per_transaction") {
		t.Errorf("max_recipients_per_transaction = 0: %v, want an error naming line 3 and the key", err)
	}
}
