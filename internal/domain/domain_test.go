package domain

import (
	"testing"

	"github.com/postline/postline/internal/apperr"
)

func TestNormalizeName(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"Bücher.example", "xn--bcher-kva.example"},
		{"localhost", ""},
		{"-bad.example", ""},
		{"a..b.example", ""},
		{"", ""},
		{"has space.example", ""},
		{"0.0.1", ""},
		{"10.0.0.1", ""},
		{"a.123", ""},
		{"x.y2k", "x.y2k"},
	}
	for _, c := range cases {
		got, err := NormalizeName(c.in)
		if (c.want == "") != (err != nil) || got != c.want {
			t.Errorf("NormalizeName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestCheckDelivery(t *testing.T) {
	t.Parallel()
	s := NewService(nil, nil, Config{RelayAllowlist: []string{"smtp.relay.example", "*.mailgun.example"}})
	cases := []struct {
		name    string
		d       Delivery
		trusted bool
		field   string // "" = valid
	}{
		{"direct", Delivery{Mode: ModeDirect}, false, ""},
		{"direct with host", Delivery{Mode: ModeDirect, Host: "x.example"}, false, "delivery.mode"},
		{"allowlisted relay", Delivery{Mode: ModeSMTP, Host: "smtp.relay.example"}, false, ""},
		{"wildcard relay", Delivery{Mode: ModeSMTP, Host: "eu.mailgun.example", User: "u", Password: "p"}, false, ""},
		{"suffix is not a match", Delivery{Mode: ModeSMTP, Host: "evilmailgun.example"}, false, "delivery.host"},
		{"internal address over the API", Delivery{Mode: ModeSMTP, Host: "10.0.0.5"}, false, "delivery.host"},
		{"operator may set any", Delivery{Mode: ModeSMTP, Host: "10.0.0.5"}, true, ""},
		{"bad port", Delivery{Mode: ModeSMTP, Host: "smtp.relay.example", Port: 70000}, false, "delivery.port"},
		{"bad tls", Delivery{Mode: ModeSMTP, Host: "smtp.relay.example", TLS: "ssl3"}, false, "delivery.tls"},
		{"user without password", Delivery{Mode: ModeSMTP, Host: "smtp.relay.example", User: "u"}, false, "delivery.password"},
		{"unknown mode", Delivery{Mode: "pigeon"}, false, "delivery.mode"},
	}
	for _, c := range cases {
		fe := apperr.FieldErrors{}
		d := c.d
		s.checkDelivery(fe, &d, c.trusted)
		if c.field == "" && len(fe) > 0 || c.field != "" && len(fe[c.field]) == 0 {
			t.Errorf("%s: errors %v, want %q", c.name, fe, c.field)
		}
		if c.field == "" && d.Mode == ModeSMTP && (d.Port != 587 && c.d.Port == 0 || d.TLS == "") {
			t.Errorf("%s: defaults not applied: %+v", c.name, d)
		}
	}
}

func TestTrackingAndAuthHosts(t *testing.T) {
	t.Parallel()
	s := NewService(nil, nil, Config{PublicHost: "mail.shop.example", ServiceHosts: []string{"api.shop.example"}})
	d := Domain{Name: "shop.example"}
	for host, ok := range map[string]bool{
		"track.shop.example": true, "Bounces.Shop.Example.": true, "a.b.shop.example": true, "": true,
		"shop.example": false, "evilshop.example": false, "track.other.example": false, "mail.shop.example": false,
		"127.0.0.1": false, "-x.shop.example": false, "api.shop.example": false,
	} {
		_, err := s.subdomainOrEmpty("host", d, host)
		if (err == nil) != ok {
			t.Errorf("host %q: %v, want ok=%v", host, err, ok)
		}
	}
}
