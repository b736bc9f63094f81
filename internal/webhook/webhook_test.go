package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"events":[]}`)
	h := Sign("whsec_abc", now, body)
	if !Verify("whsec_abc", h, body, now.Add(time.Minute), 5*time.Minute) {
		t.Fatalf("own signature %q rejected", h)
	}
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		at             time.Time
	}{
		"other secret":  {"whsec_abd", h, body, now},
		"altered body":  {"whsec_abc", h, []byte(`{"events":[1]}`), now},
		"replayed late": {"whsec_abc", h, body, now.Add(6 * time.Minute)},
		"from future":   {"whsec_abc", h, body, now.Add(-6 * time.Minute)},
		"no signature":  {"whsec_abc", "t=1800000000", body, now},
		"garbage":       {"whsec_abc", "nonsense", body, now},
	} {
		if Verify(c.secret, c.header, c.body, c.at, 5*time.Minute) {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second}
	for i, w := range want {
		if got := Backoff(10*time.Second, i+1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := Backoff(10*time.Second, 50); got != time.Hour {
		t.Errorf("Backoff(50) = %v, want the 1h cap", got)
	}
}

// The guard works on the dialled address: a loopback receiver is refused
// unless private addresses are allowed.
func TestClientRefusesLoopbackUnlessAllowed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	post := func(c *http.Client) error {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := post(newClient(false, time.Second, nil)); !errors.Is(err, errForbiddenAddress) {
		t.Errorf("guarded client: %v, want the forbidden-address error", err)
	}
	if err := post(newClient(true, time.Second, nil)); err != nil {
		t.Errorf("client allowing private addresses: %v", err)
	}
}
