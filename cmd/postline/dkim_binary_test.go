package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/postline/postline/internal/dnsclient"
)

// dkimRecord finds the TXT record of purpose in `postline domain`'s
// records table: its name and value.
func dkimRecord(t *testing.T, out, purpose string) (name, value string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + purpose + `\s+TXT\s+(\S+)\s+(v=DKIM1; k=\w+; p=[A-Za-z0-9+/=]+)\s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s record in:\n%s", purpose, out)
	}
	return m[1], m[2]
}

// Ed25519 (RFC 8463) as a second signature, through the binary: turned on
// with `domain update --dkim-ed25519`, its record is shown and required by
// verify; a message then reaches the MX with two DKIM-Signature fields,
// RSA and Ed25519, each verifying against the key the DNS serves; turned
// off, the record is no longer asked for.
func TestBinaryDKIMEd25519(t *testing.T) {
	t.Parallel()
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir()})
	code, out, errs := cliEnv(t, rig.vars, "domain", "update", "shop.example.com", "--dkim-ed25519")
	if code != 0 || !strings.Contains(out, "shop.example.com signs with Ed25519 beside RSA; publish:") {
		t.Fatalf("update --dkim-ed25519: exit %d %q %q", code, out, errs)
	}
	edName, edValue := dkimRecord(t, out, "dkim_ed25519")
	_, show, _ := cliEnv(t, rig.vars, "domain", "show", "shop.example.com")
	rsaName, rsaValue := dkimRecord(t, show, "dkim")
	if n, v := dkimRecord(t, show, "dkim_ed25519"); n != edName || v != edValue {
		t.Errorf("show's dkim_ed25519 record %s %q differs from update's %s %q", n, v, edName, edValue)
	}
	if edName != strings.TrimSuffix(rsaName, "._domainkey.shop.example.com")+"-ed._domainkey.shop.example.com" ||
		!strings.HasPrefix(edValue, "v=DKIM1; k=ed25519; p=") || !strings.Contains(show, "ed25519:   on, selector") {
		t.Fatalf("Ed25519 record %s %q beside RSA's %s; show:\n%s", edName, edValue, rsaName, show)
	}
	// verify looks the Ed25519 record up and requires it.
	rig.dns.AddTXT("shop.example.com", "v=spf1 a mx ~all")
	rig.dns.AddTXT(rsaName, rsaValue)
	code, out, _ = cliEnv(t, rig.vars, "domain", "verify", "shop.example.com")
	if code == 0 || !regexp.MustCompile(`(?m)^dkim_ed25519\s.*\bmissing$`).MatchString(out) {
		t.Errorf("verify without the Ed25519 record: exit %d\n%s\nwant a failure naming dkim_ed25519 missing", code, out)
	}
	rig.dns.AddTXT(edName, edValue)
	if code, out, errs = cliEnv(t, rig.vars, "domain", "verify", "shop.example.com"); code != 0 ||
		!regexp.MustCompile(`(?m)^dkim_ed25519\s.*\bok$`).MatchString(out) {
		t.Fatalf("verify with both records: exit %d\n%s%s", code, out, errs)
	}

	srv := startServe(t, rig.env())
	rig.sendHTML(t, srv, "ann@rcpt.example.net", "<p>Hi</p>")
	m := rig.messageTo(t, "ann@rcpt.example.net", 1)
	srv.stop(t)
	res, err := dnsclient.New(dnsclient.Config{Server: rig.dns.Addr(), Timeout: 2 * time.Second, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) { return res.LookupTXT(context.Background(), name) },
	})
	if err != nil || len(vs) != 2 {
		t.Fatalf("the received message has %d signatures (%v), want 2:\n%.2000s", len(vs), err, m.Data)
	}
	for _, v := range vs {
		if v.Err != nil || v.Domain != "shop.example.com" {
			t.Errorf("signature d=%s: %v; want a pass", v.Domain, v.Err)
		}
	}
	for _, a := range []string{"a=rsa-sha256", "a=ed25519-sha256"} {
		if n := bytes.Count(bytes.ReplaceAll(m.Data, []byte("\r\n "), nil), []byte(a)); n != 1 {
			t.Errorf("the message has %d signatures with %s, want 1", n, a)
		}
	}

	code, out, _ = cliEnv(t, rig.vars, "domain", "update", "shop.example.com", "--dkim-ed25519=false")
	_, show, _ = cliEnv(t, rig.vars, "domain", "show", "shop.example.com")
	if code != 0 || !strings.Contains(out, "signs with RSA only") || strings.Contains(show, "dkim_ed25519") || !strings.Contains(show, "ed25519:   off") {
		t.Errorf("update --dkim-ed25519=false: exit %d %q; show:\n%s", code, out, show)
	}
	// domain add takes it too, and prints the record with the others.
	code, out, errs = cliEnv(t, rig.vars, "domain", "add", "alice", "news.example.com", "--direct", "--dkim-ed25519")
	if code != 0 {
		t.Fatalf("add --dkim-ed25519: exit %d %s", code, errs)
	}
	if n, v := dkimRecord(t, out, "dkim_ed25519"); !strings.HasSuffix(n, "-ed._domainkey.news.example.com") || !strings.HasPrefix(v, "v=DKIM1; k=ed25519; p=") {
		t.Errorf("add --dkim-ed25519 printed %s %q", n, v)
	}
}
