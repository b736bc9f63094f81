package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
	"github.com/postline/postline/internal/webhook"
)

// mgReceiver is a Mailgun webhook endpoint written from Mailgun's
// published algorithm ("Securing webhooks"): the signature is the hex
// HMAC-SHA256 of timestamp+token under the signing key; a timestamp far
// from now or a token seen before is a replay. Its answers are scripted
// per event id (default 200).
type mgReceiver struct {
	t      *testing.T
	key    string
	mu     sync.Mutex
	tokens map[string]bool
	answer map[string][]int // event id → statuses to answer, in turn
	got    []mgPost         // every post, in order
	ok     map[string]int   // event id → posts answered 2xx
}

type mgPost struct {
	ID, Event, Severity string
	Status              int
	Data                map[string]any
}

func newMGReceiver(t *testing.T, key string) *mgReceiver {
	return &mgReceiver{t: t, key: key, tokens: map[string]bool{}, answer: map[string][]int{}, ok: map[string]int{}}
}

func (rc *mgReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p struct {
		Signature struct{ Timestamp, Token, Signature string } `json:"signature"`
		EventData map[string]any                               `json:"event-data"`
	}
	if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &p) != nil {
		rc.t.Errorf("post %q %s: want a JSON body", r.Header.Get("Content-Type"), body)
		w.WriteHeader(400)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	m := hmac.New(sha256.New, []byte(rc.key))
	m.Write([]byte(p.Signature.Timestamp + p.Signature.Token))
	ts, err := strconv.ParseInt(p.Signature.Timestamp, 10, 64)
	switch {
	case !hmac.Equal([]byte(hex.EncodeToString(m.Sum(nil))), []byte(p.Signature.Signature)):
		rc.t.Errorf("signature %+v does not verify under the account's key", p.Signature)
	case err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute:
		rc.t.Errorf("timestamp %q is not now", p.Signature.Timestamp)
	case len(p.Signature.Token) < 32 || rc.tokens[p.Signature.Token]:
		rc.t.Errorf("token %q short or used before", p.Signature.Token)
	}
	rc.tokens[p.Signature.Token] = true
	id, _ := p.EventData["id"].(string)
	status := 200
	if a := rc.answer[id]; len(a) > 0 {
		status, rc.answer[id] = a[0], a[1:]
	}
	ev, _ := p.EventData["event"].(string)
	sev, _ := p.EventData["severity"].(string)
	rc.got = append(rc.got, mgPost{ID: id, Event: ev, Severity: sev, Status: status, Data: p.EventData})
	if status < 300 {
		rc.ok[id]++
	}
	w.WriteHeader(status)
}

func (rc *mgReceiver) posts() []mgPost {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]mgPost(nil), rc.got...)
}

type fakeHeaders map[string]map[string]string

func (f fakeHeaders) SendHeaders(_ context.Context, _ int64, ids []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, id := range ids {
		out[id] = f[id]
	}
	return out, nil
}

// TestMailgunDispatch: a Mailgun-format webhook posts each event of its
// id alone, signed with the account's key, with the user variables and
// the TLS outcome; a 5xx is retried until it succeeds, a 406 is not
// retried, an event failing longer than the retry window is given up,
// and the events after each are still posted, each once.
func TestMailgunDispatch(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			testMailgunDispatch(t, testutil.OpenDB(t, d))
		})
	}
}

func testMailgunDispatch(t *testing.T, db *store.DB) {
	ctx := context.Background()
	acc, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	box, _ := secret.NewBox(make([]byte, 32))
	st, events := store.NewWebhooks(db, box), store.NewEvents(db)
	svc := webhook.NewService(st, nil)
	key, err := svc.SigningKey(ctx, acc.ID)
	if err != nil || len(key) < 32 {
		t.Fatalf("SigningKey = %q, %v", key, err)
	}
	rc := newMGReceiver(t, key)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	for _, id := range []string{"delivered", "permanent_fail"} {
		if _, err := svc.SetMailgunWebhook(ctx, dom.ID, id, []string{srv.URL + "/mg"}, webhook.MustBeNew); err != nil {
			t.Fatal(err)
		}
	}
	tlsOn := `{"smtp_code":250,"smtp_message":"ok","tls":{"version":"TLS1.3","verified":true,"policy":"none"}}`
	tlsOff := `{"smtp_code":250,"smtp_message":"ok","tls":{"version":null,"verified":false,"policy":"none"}}`
	var es []event.Entry
	for i := range 12 {
		e := event.Entry{DomainID: dom.ID, MessageID: "m" + strconv.Itoa(i%3) + "@alice.example", Type: event.Delivered,
			Recipient: "r" + strconv.Itoa(i) + "@rcpt.example", CreatedAt: time.Now(), Details: []byte(tlsOn)}
		switch i % 4 {
		case 1:
			e.Type = event.Queued // no webhook for accepted
		case 2:
			e.Type, e.Details = event.PermanentFail, []byte(`{"smtp_code":550,"smtp_message":"no such user"}`)
		case 3:
			e.Details = []byte(tlsOff)
		}
		es = append(es, e)
	}
	es[10].CreatedAt = time.Now().Add(-2 * time.Hour) // older than the retry window
	if err := events.Insert(ctx, es); err != nil {
		t.Fatal(err)
	}
	stored, _ := events.List(ctx, event.Filter{DomainID: dom.ID, Order: event.OldestFirst, Limit: 100})
	id := func(i int) string { return strconv.FormatInt(stored[i].ID, 10) }
	rc.mu.Lock()
	rc.answer[id(0)] = []int{500, 503}  // retried until it succeeds
	rc.answer[id(2)] = []int{406}       // refused for good
	rc.answer[id(10)] = []int{500, 500} // given up: too old
	rc.mu.Unlock()

	disp := webhook.NewDispatcher(webhook.DispatcherConfig{AllowPrivate: true, RetryBase: time.Millisecond,
		MailgunRetryWindow: time.Hour, Headers: fakeHeaders{"m1@alice.example": {"X-Mailgun-Variables": `{"order":"A-1"}`}}},
		st, events, func(context.Context, int64) (string, error) { return dom.Name, nil })
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		disp.RunOnce(ctx)
		if list, _ := svc.List(ctx, dom.ID); list[0].Cursor >= stored[len(stored)-1].ID && list[1].Cursor >= stored[len(stored)-1].ID {
			break
		}
		time.Sleep(3 * time.Millisecond)
	}
	posts := rc.posts()
	want := map[string]int{} // event id → posts expected
	for i, e := range stored {
		switch {
		case e.Type == event.Queued:
		case i == 0:
			want[id(i)] = 3
		default:
			want[id(i)] = 1
		}
	}
	got := map[string]int{}
	for _, p := range posts {
		got[p.ID]++
	}
	for i := range stored {
		if got[id(i)] != want[id(i)] {
			t.Errorf("event %d (%s): posted %d times; want %d", i, stored[i].Type, got[id(i)], want[id(i)])
		}
	}
	rc.mu.Lock()
	for i, e := range stored {
		if wantOK := map[bool]int{true: 1}[e.Type != event.Queued && i != 2 && i != 10]; rc.ok[id(i)] != wantOK {
			t.Errorf("event %d: accepted %d times; want %d", i, rc.ok[id(i)], wantOK)
		}
	}
	rc.mu.Unlock()
	for _, p := range posts {
		i := 0
		for j := range stored {
			if id(j) == p.ID {
				i = j
			}
		}
		ds, _ := p.Data["delivery-status"].(map[string]any)
		uv, _ := p.Data["user-variables"].(map[string]any)
		switch {
		case stored[i].Type == event.PermanentFail && (p.Event != "failed" || p.Severity != "permanent"):
			t.Errorf("event %d: %s/%s; want failed/permanent", i, p.Event, p.Severity)
		case stored[i].Type == event.Delivered && p.Event != "delivered":
			t.Errorf("event %d: %s; want delivered", i, p.Event)
		case stored[i].Type == event.Delivered && (ds["tls"] != (i%4 == 0) || ds["certificate-verified"] != (i%4 == 0)):
			t.Errorf("event %d: delivery-status %v; want tls and certificate-verified %v", i, ds, i%4 == 0)
		case p.Data["recipient"] != stored[i].Recipient:
			t.Errorf("event %d: recipient %v", i, p.Data["recipient"])
		case (stored[i].MessageID == "m1@alice.example") != (uv["order"] == "A-1"):
			t.Errorf("event %d of %s: user-variables %v", i, stored[i].MessageID, uv)
		}
	}
	list, _ := svc.List(ctx, dom.ID)
	for _, w := range list {
		if w.Attempts != 0 || w.Cursor < stored[len(stored)-1].ID {
			t.Errorf("webhook %s after catching up: cursor %d, %d failures; want past %d, none", w.MailgunEvent, w.Cursor,
				w.Attempts, stored[len(stored)-1].ID)
		}
	}
	recent, _ := svc.Posts(ctx, dom.ID, list[1].ID, 50) // permanent_fail's: event 2 is one
	var refused bool
	for _, p := range recent {
		refused = refused || (p.Status == 406 && p.Error != "")
	}
	if !refused {
		t.Errorf("the permanent_fail webhook's posts %+v; want the 406 recorded", recent)
	}
}

// A Mailgun-format webhook is held to the same guard as Postline's: a
// URL on a loopback address is not posted to unless the operator allows
// private addresses, and the failure says why.
func TestMailgunDispatchRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testutil.OpenDB(t, store.SQLite)
	_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	box, _ := secret.NewBox(make([]byte, 32))
	st, events := store.NewWebhooks(db, box), store.NewEvents(db)
	svc := webhook.NewService(st, nil)
	var posts int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { mu.Lock(); posts++; mu.Unlock() }))
	defer srv.Close()
	if _, err := svc.SetMailgunWebhook(ctx, dom.ID, "delivered", []string{srv.URL}, webhook.MustBeNew); err != nil {
		t.Fatal(err)
	}
	if err := events.Insert(ctx, []event.Entry{{DomainID: dom.ID, Type: event.Delivered, CreatedAt: time.Now(), Details: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	disp := webhook.NewDispatcher(webhook.DispatcherConfig{}, st, events, func(context.Context, int64) (string, error) { return dom.Name, nil })
	disp.RunOnce(ctx)
	list, _ := svc.List(ctx, dom.ID)
	mu.Lock()
	defer mu.Unlock()
	if posts != 0 || len(list) != 1 || list[0].Attempts != 1 || !strings.Contains(list[0].LastError, "not allowed") {
		t.Fatalf("%d posts; webhook %+v; want none, one failure saying the address is not allowed", posts, list)
	}
}
