package sending

import (
	"testing"

	"github.com/postline/postline/internal/domain"
)

// TestEnvelopeFrom: a send's MAIL FROM is its sender, or a bounce address
// of the delivery under the authentication domain; a forward's is always
// a bounce address, under the domain itself without an authentication
// domain (its bounces come back here, never to the original sender), and
// each reads back as its delivery while an altered one does not.
func TestEnvelopeFrom(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	w := &Worker{cfg: WorkerConfig{VERPKey: key}}
	plain := domain.Domain{Name: "shop.example"}
	withAuth := domain.Domain{Name: "shop.example", AuthDomain: "bounces.shop.example"}
	d := Delivery{ID: 42, Sender: "forwarded@shop.example"}
	for _, c := range []struct {
		name    string
		dom     domain.Domain
		forward bool
		want    string // "" for a bounce address under host
		host    string
	}{
		{"a send, no authentication domain", plain, false, "forwarded@shop.example", ""},
		{"a send under an authentication domain", withAuth, false, "", "bounces.shop.example"},
		{"a forward, no authentication domain", plain, true, "", "shop.example"},
		{"a forward under an authentication domain", withAuth, true, "", "bounces.shop.example"},
	} {
		got := w.envelopeFrom(c.dom, d, c.forward)
		if c.want != "" {
			if got != c.want {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
			continue
		}
		if got != VERPAddress(key, 42, c.host) {
			t.Errorf("%s: %q, want the bounce address of delivery 42 under %s", c.name, got, c.host)
		}
		if id, ok := ParseVERP(key, got); !ok || id != 42 {
			t.Errorf("%s: %q reads back as %d, %v", c.name, got, id, ok)
		}
		if _, ok := ParseVERP(key, "bounce+43"+got[len("bounce+42"):]); ok {
			t.Errorf("%s: another delivery's id with this MAC is taken", c.name)
		}
	}
	if got := (&Worker{}).envelopeFrom(plain, d, true); got != d.Sender {
		t.Errorf("without a key: %q, want the sender", got)
	}
}
