package app_test

import (
	"bytes"
	"context"
	"errors"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// A domain whose DKIM key was sealed under another key is shown, marked,
// in a list of three; the other two keep working, and the broken one
// answers 503 with the reason instead of 500 for the whole account.
func TestUnreadableDomainInAListOfThree(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		for _, n := range []string{"a.example", "b.example", "c.example"} {
			env.NewDomain(alice, n)
		}
		other, _ := secret.NewBox(bytes.Repeat([]byte{9}, 32))
		if _, err := env.App.DB.Writer().ExecContext(context.Background(),
			`UPDATE domains SET dkim_key = $1 WHERE name = 'b.example'`, other.Seal([]byte("not this server's"))); err != nil {
			t.Fatal(err)
		}
		resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: alice.Auth()})
		list, _ := resp.JSON["data"].([]any)
		if resp.StatusCode != 200 || len(list) != 3 {
			t.Fatalf("GET /api/domains: %d %s; want 200 with three domains", resp.StatusCode, resp.Body)
		}
		for _, item := range list {
			m := item.(map[string]any)
			_, marked := m["unreadable"]
			if marked != (m["name"] == "b.example") {
				t.Errorf("domain %v: unreadable %v; want it on b.example only", m["name"], m["unreadable"])
			}
		}
		form := map[string]string{"from": "x@b.example", "to": "jane@dest.example", "subject": "s", "text": "t"}
		body, h := formRequest(form)
		resp = env.Do(apitest.Request{Method: "POST", Path: "/api/domains/b.example/message", Auth: alice.Auth(), Body: body, Header: h})
		if resp.StatusCode != 503 || !strings.Contains(string(resp.Body), "DKIM key cannot be decrypted") {
			t.Errorf("send from the unreadable domain: %d %s; want 503 naming the DKIM key", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "PUT", Path: "/api/domains/b.example/tracking", Auth: alice.Auth(),
			Body: map[string]bool{"opens": true}})
		if resp.StatusCode != 503 {
			t.Errorf("changing the unreadable domain: %d %s; want 503 (a write would drop its secrets)", resp.StatusCode, resp.Body)
		}
		form["from"] = "x@c.example"
		body, h = formRequest(form)
		resp = env.Do(apitest.Request{Method: "POST", Path: "/api/domains/c.example/message", Auth: alice.Auth(), Body: body, Header: h})
		if resp.StatusCode != 202 {
			t.Errorf("send from a readable domain of the same account: %d %s; want 202", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains/b.example/log", Auth: alice.Auth()})
		if resp.StatusCode != 200 {
			t.Errorf("log of the unreadable domain: %d %s; want 200", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "DELETE", Path: "/api/domains/b.example", Auth: alice.Auth()})
		if resp.StatusCode != 200 {
			t.Errorf("removing the unreadable domain: %d %s; want 200", resp.StatusCode, resp.Body)
		}
	})
}

// openWithKey opens an app on url with the key given as the operator
// would, by POSTLINE_SECRET_KEY.
func openWithKey(t *testing.T, url, dataDir string, key []byte) (*app.App, error) {
	t.Helper()
	cfg := config.Default()
	cfg.DatabaseURL, cfg.DataDir = url, dataDir
	if key != nil {
		cfg.SecretKey = secret.Encode(key)
	}
	return app.Open(context.Background(), cfg, nil, app.Options{DKIMKeyBits: 1024, Command: "test"})
}

// The trap: a second process with another key (or none) must not
// run against a database whose values are sealed with the first key. Both
// the fingerprint and, for a database from before fingerprints, the
// sealed values themselves give it away.
func TestWrongSecretKeyIsRefused(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		url, dir := testutil.DatabaseURL(t, d), t.TempDir()
		keyA, keyB := secret.NewKey(), secret.NewKey()
		a, err := openWithKey(t, url, dir, keyA)
		if err != nil {
			t.Fatal(err)
		}
		acc, _ := a.Accounts.CreateUser(ctx, "alice")
		if _, err := a.Domains.Add(ctx, domain.AddParams{AccountID: acc.ID, Name: "alice.example",
			Delivery: domain.Delivery{Mode: domain.ModeDirect}, Trusted: true}); err != nil {
			t.Fatal(err)
		}
		a.Close()

		_, err = openWithKey(t, url, dir, keyB)
		var wrong *app.WrongKeyError
		if !errors.As(err, &wrong) || !strings.Contains(err.Error(), secret.Fingerprint(keyA)) ||
			!strings.Contains(err.Error(), secret.Fingerprint(keyB)) || !strings.Contains(err.Error(), "recorded by `postline test`") {
			t.Fatalf("open with another key: %v; want a WrongKeyError naming both fingerprints and where the first was recorded", err)
		}
		_, err = openWithKey(t, url, dir, nil)
		if !errors.As(err, &wrong) || !strings.Contains(err.Error(), "no --secret-key, no POSTLINE_SECRET_KEY") {
			t.Fatalf("open with no key: %v; want a WrongKeyError saying no key was given", err)
		}
		if _, ok, _ := secret.FindKey("", "", dir); ok {
			t.Fatal("a refused start created secret.key")
		}

		// A database from before fingerprints: the sealed DKIM key decides.
		if _, err := openDB(t, url).Writer().ExecContext(ctx, `DELETE FROM meta`); err != nil {
			t.Fatal(err)
		}
		if _, err = openWithKey(t, url, dir, keyB); !errors.As(err, &wrong) || !strings.Contains(err.Error(), "domains.dkim_key") {
			t.Fatalf("old database, other key: %v; want a WrongKeyError naming domains.dkim_key", err)
		}
		if _, err = openWithKey(t, url, dir, nil); !errors.As(err, &wrong) {
			t.Fatalf("old database, no key: %v; want a WrongKeyError", err)
		}
		if _, ok, _ := secret.FindKey("", "", dir); ok {
			t.Fatal("a refused start on an old database created secret.key")
		}
		a, err = openWithKey(t, url, dir, keyA)
		if err != nil {
			t.Fatalf("old database, its own key: %v", err)
		}
		a.Close()
		if _, err = openWithKey(t, url, dir, keyB); !errors.As(err, &wrong) || !strings.Contains(err.Error(), secret.Fingerprint(keyA)) {
			t.Fatalf("after the right key recorded its fingerprint, another key: %v", err)
		}
	})
}

func openDB(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// formRequest is a multipart/form-data body of plain fields and its header.
func formRequest(fields map[string]string) ([]byte, http.Header) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	mw.Close()
	return buf.Bytes(), http.Header{"Content-Type": {mw.FormDataContentType()}}
}

// populateSecrets gives the database one value in every sealed column the
// tests know how to make: a relay domain with a password and an Ed25519
// DKIM key, a webhook and
// the account's webhook signing key. It returns the domain, the webhook's
// secret and the signing key.
func populateSecrets(t *testing.T, a *app.App) (domain.Domain, string, string) {
	t.Helper()
	ctx := context.Background()
	acc, err := a.Accounts.CreateUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Domains.Add(ctx, domain.AddParams{AccountID: acc.ID, Name: "alice.example", Trusted: true, DKIMEd25519: true,
		Delivery: domain.Delivery{Mode: domain.ModeSMTP, Host: "relay.example.net", User: "u", Password: "hunter2"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Webhooks.Create(ctx, d.ID, "https://hooks.example.net/p", nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := a.Webhooks.SigningKey(ctx, acc.ID)
	if err != nil || key == "" {
		t.Fatalf("signing key: %q, %v", key, err)
	}
	// A queued send whose attachments are still to be encrypted keeps its
	// options (with the ZIP password) sealed until the job runs.
	v, _, err := a.Domains.Verify(ctx, d, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sending.Accept(ctx, v, acc.ID, sending.Request{From: "a@alice.example", To: []string{"b@rcpt.example"},
		Subject: "s", Text: "t", Options: `{"password":"zip-secret-1"}`,
		Attachments: []sending.Attachment{{Filename: "a.txt", ContentType: "text/plain", Data: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	return d, w.Secret, key
}

// Every sealed value in a populated database is in a column that
// store.SealedColumns lists (so rotation re-seals it), and every listed
// column was found: a table or secret added later cannot be forgotten.
func TestSealedColumnsAreAllKnown(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		url := testutil.DatabaseURL(t, d)
		a, err := openWithKey(t, url, t.TempDir(), secret.NewKey())
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		populateSecrets(t, a)
		known := map[string]bool{}
		for _, c := range store.SealedColumns {
			known[c.Table+"."+c.Column] = true
		}
		found := map[string]bool{}
		for _, col := range textColumns(t, a.DB) {
			var n int
			if err := a.DB.Reader().QueryRowContext(context.Background(),
				`SELECT COUNT(*) FROM `+col[0]+` WHERE `+col[1]+` LIKE 'v1:%'`).Scan(&n); err != nil {
				t.Fatalf("%s.%s: %v", col[0], col[1], err)
			}
			if n > 0 {
				found[col[0]+"."+col[1]] = true
			}
		}
		for c := range found {
			if !known[c] {
				t.Errorf("column %s holds sealed values but is not in store.SealedColumns: rotation would skip it", c)
			}
		}
		for c := range known {
			if !found[c] {
				t.Errorf("store.SealedColumns lists %s but the populated database has no sealed value there: populate it in this test", c)
			}
		}
	})
}

// textColumns lists every text column of every table, from the schema.
func textColumns(t *testing.T, db *store.DB) [][2]string {
	t.Helper()
	ctx := context.Background()
	q := `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND data_type IN ('text', 'character varying') ORDER BY 1, 2`
	if db.Dialect == store.SQLite {
		q = `SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
			WHERE m.type = 'table' AND m.sql NOT LIKE 'CREATE VIRTUAL%' AND upper(p.type) = 'TEXT' ORDER BY 1, 2`
	}
	rows, err := db.Reader().QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var c [2]string
		if err := rows.Scan(&c[0], &c[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d text columns: the schema query is wrong", len(out))
	}
	return out
}

// Rotation re-seals everything in one transaction: afterwards the new key
// opens every secret unchanged and the old key is refused.
func TestSecretRotate(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		url, dir := testutil.DatabaseURL(t, d), t.TempDir()
		oldKey, newKey := secret.NewKey(), secret.NewKey()
		a, err := openWithKey(t, url, dir, oldKey)
		if err != nil {
			t.Fatal(err)
		}
		dom, hookSecret, signingKey := populateSecrets(t, a)
		n, err := a.RotateSecretKey(ctx, newKey)
		a.Close()
		if err != nil || n != len(store.SealedColumns) {
			t.Fatalf("rotate: %d values, %v; want %d (one per sealed column)", n, err, len(store.SealedColumns))
		}
		var wrong *app.WrongKeyError
		if _, err := openWithKey(t, url, dir, oldKey); !errors.As(err, &wrong) {
			t.Fatalf("old key after rotation: %v; want refused", err)
		}
		a, err = openWithKey(t, url, dir, newKey)
		if err != nil {
			t.Fatalf("new key after rotation: %v", err)
		}
		defer a.Close()
		got, err := a.Domains.Get(ctx, "alice.example")
		if err != nil || got.Unreadable != "" || !bytes.Equal(got.DKIMPrivateKey, dom.DKIMPrivateKey) || got.Delivery.Password != "hunter2" ||
			len(dom.DKIMEd25519Key) == 0 || !bytes.Equal(got.DKIMEd25519Key, dom.DKIMEd25519Key) {
			t.Fatalf("domain after rotation: unreadable %q, same DKIM key %v, same Ed25519 key %v, password %q, %v", got.Unreadable,
				bytes.Equal(got.DKIMPrivateKey, dom.DKIMPrivateKey), bytes.Equal(got.DKIMEd25519Key, dom.DKIMEd25519Key), got.Delivery.Password, err)
		}
		hooks, err := a.Webhooks.List(ctx, dom.ID)
		if err != nil || len(hooks) != 1 || hooks[0].Secret != hookSecret {
			t.Fatalf("webhook after rotation: %+v, %v; want its secret unchanged", hooks, err)
		}
		if key, err := a.Webhooks.SigningKey(ctx, dom.AccountID); err != nil || key != signingKey {
			t.Fatalf("webhook signing key after rotation: %q, %v; want it unchanged (%q)", key, err, signingKey)
		}

		// A value the current key cannot open stops the rotation, and
		// nothing changes.
		other, _ := secret.NewBox(bytes.Repeat([]byte{3}, 32))
		if _, err := a.DB.Writer().ExecContext(ctx, `UPDATE webhooks SET secret = $1`, other.Seal([]byte("x"))); err != nil {
			t.Fatal(err)
		}
		if _, err := a.RotateSecretKey(ctx, secret.NewKey()); err == nil || !strings.Contains(err.Error(), "webhooks.secret") {
			t.Fatalf("rotate with an unreadable value: %v; want an error naming webhooks.secret", err)
		}
		if got, _ := a.Domains.Get(ctx, "alice.example"); got.Delivery.Password != "hunter2" {
			t.Fatal("a failed rotation changed the domain's sealed password")
		}
	})
}
