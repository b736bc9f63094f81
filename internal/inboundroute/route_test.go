package inboundroute

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func mustCompile(t *testing.T, id string, priority int, expr string, actions ...string) *Route {
	t.Helper()
	r, err := Definition{ID: id, Priority: priority, Expression: expr, Actions: actions}.Compile()
	if err != nil {
		t.Fatalf("Compile(%s, %q): %v", expr, actions, err)
	}
	return r
}

// describe lists actions as "route:kind:destination" for comparison.
func describe(acts []Action) []string {
	var out []string
	for _, a := range acts {
		s := fmt.Sprintf("%s:%s:%s%s%s", a.RouteID, a.Kind, a.URL, a.Address, a.Notify)
		if a.Skipped != "" {
			s += ":skipped"
		}
		out = append(out, s)
	}
	return out
}

// Every route whose expression matches runs, in priority order (equal
// priorities in the given order), until one with stop(); catch_all()
// runs only when no earlier route matched.
func TestEvaluatePriorityStopCatchAll(t *testing.T) {
	t.Parallel()
	routes := []*Route{
		mustCompile(t, "catch", 100, `catch_all()`, `store()`),
		mustCompile(t, "vip", 1, `match_recipient("vip@shop.example")`, `forward("https://crm.example/vip")`, `stop()`),
		mustCompile(t, "all", 5, `match_recipient(".*@shop.example")`, `forward("https://app.example/in")`),
		mustCompile(t, "support", 5, `match_recipient("support@shop.example")`, `forward("desk@help.example")`),
		mustCompile(t, "urgent", 3, `match_header("Subject", ".*urgent")`, `forward("pager@ops.example")`),
	}
	Sort(routes)
	if routes[0].ID != "vip" || routes[2].ID != "all" || routes[3].ID != "support" || routes[4].ID != "catch" {
		t.Fatalf("Sort kept equal priorities out of order: %v", []string{routes[0].ID, routes[1].ID, routes[2].ID, routes[3].ID, routes[4].ID})
	}
	cases := []struct {
		rcpt string
		h    Header
		want []string
	}{
		{"vip@shop.example", hdr("Subject", "urgent!"), []string{"vip:forward:https://crm.example/vip", "vip:stop:"}},
		{"support@shop.example", hdr("Subject", "so urgent"), []string{"urgent:forward:pager@ops.example",
			"all:forward:https://app.example/in", "support:forward:desk@help.example"}},
		{"Support@Shop.Example", nil, []string{"all:forward:https://app.example/in", "support:forward:desk@help.example"}},
		{"someone@other.example", nil, []string{"catch:store:"}},
		{"someone@other.example", hdr("Subject", "urgent"), []string{"urgent:forward:pager@ops.example"}},
	}
	for _, c := range cases {
		if got := describe(Evaluate(routes, c.rcpt, c.h)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Evaluate(%s, %v) = %q, want %q", c.rcpt, c.h, got, c.want)
		}
	}
	if got := Evaluate(nil, "a@x.example", nil); len(got) != 0 {
		t.Errorf("no routes: %v", got)
	}
}

func TestDecidesOnRecipient(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string]bool{
		`match_recipient("a@x")`:                             true,
		`catch_all()`:                                        true,
		`match_header("Subject", "x")`:                       false,
		`match_recipient("a@x") and match_header("To", "x")`: false,
	} {
		r := mustCompile(t, "r", 0, expr, "stop()")
		if r.DecidesOnRecipient() != want {
			t.Errorf("%s: DecidesOnRecipient = %v, want %v", expr, !want, want)
		}
	}
	r := mustCompile(t, "r", 0, `match_recipient("a@x") and match_header("To", "x")`, "stop()")
	if ok, _ := r.MatchRecipient("a@x"); !ok {
		t.Error("MatchRecipient ignores the header filter and matches")
	}
	if ok, _ := r.Match("a@x", nil); ok {
		t.Error("Match without a header matched a match_header route")
	}
}

// Captures fill the actions: percent-encoded in URLs (no new parameter,
// segment or header), as they are in addresses, which must stay valid or
// the action is skipped with the reason while the others run.
func TestActionsCaptures(t *testing.T) {
	t.Parallel()
	r := mustCompile(t, "r", 0, `match_recipient("(?P<user>[^@]*)@(?P<domain>.*)") and match_header("Subject", "(?s)(.*)")`,
		`forward("http://myhost.example/post/?mailbox=\1&subject=\3")`,
		`forward("https://cb.example/domains/\g<domain>/users/\g<user>")`,
		`forward("archive+\1@keep.example")`,
		`store(notify="https://app.example/ready?to=\g<1>")`,
		`forward("https://lit.example/a%2Cb , copy@keep.example")`)
	ok, caps := r.Match("Ann.Lee@Shop.example", hdr("Subject", "Order #5 & more\r\nX-Evil: 1"))
	if !ok {
		t.Fatal("no match")
	}
	got := describe(r.Actions(caps))
	want := []string{
		"r:forward:http://myhost.example/post/?mailbox=Ann.Lee&subject=Order%20%235%20%26%20more%0D%0AX-Evil%3A%201",
		"r:forward:https://cb.example/domains/Shop.example/users/Ann.Lee",
		"r:forward:archive+Ann.Lee@keep.example",
		"r:store:https://app.example/ready?to=Ann.Lee",
		// A forward's destinations are split at commas (a comma in a
		// URL is written %2C).
		"r:forward:https://lit.example/a%2Cb",
		"r:forward:copy@keep.example",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %q\nwant %q", got, want)
	}
	u, _ := url.Parse(r.Actions(caps)[0].URL)
	if q := u.Query(); q.Get("subject") != "Order #5 & more\r\nX-Evil: 1" || len(q) != 2 {
		t.Errorf("the subject capture changed the query: %v", q)
	}

	// A capture that makes the address invalid skips that action only.
	r = mustCompile(t, "s", 0, `match_recipient("(.*)\+fwd@x\.example")`, `forward("\1@keep.example")`, `store()`)
	for rcpt, skip := range map[string]bool{"box+fwd@x.example": false, `a b+fwd@x.example`: true, "a\"b+fwd@x.example": true, "+fwd@x.example": true} {
		ok, caps := r.Match(rcpt, nil)
		if !ok {
			t.Fatalf("%q: no match", rcpt)
		}
		acts := r.Actions(caps)
		if (acts[0].Skipped != "") != skip || (skip && acts[0].Address != "") || acts[1].Kind != KindStore || acts[1].Skipped != "" {
			t.Errorf("%q: actions %+v; want the forward skipped=%v and the store run", rcpt, acts, skip)
		}
		if skip && !strings.Contains(acts[0].Skipped, "is refused") {
			t.Errorf("%q: skip reason %q", rcpt, acts[0].Skipped)
		}
	}

	// A capture that pushes a URL past its bound skips it, saying so.
	r = mustCompile(t, "u", 0, `match_header("Subject", "(.*)")`, `forward("https://app.example/?s=\1")`)
	_, caps = r.Match("a@x.example", hdr("Subject", strings.Repeat("é", MaxURLBytes/4)))
	if acts := r.Actions(caps); acts[0].Skipped == "" || !strings.Contains(acts[0].Skipped, "at most 2048 bytes") || acts[0].URL != "" {
		t.Errorf("an overlong URL: %+v", acts[0])
	}
}

// A URL with what RFC 3986 does not allow is refused when written, not
// at delivery.
func TestURLCharactersRefused(t *testing.T) {
	t.Parallel()
	for _, u := range []string{`https://lit.example/a\\b`, `https://lit.example/{x}`, `https://lit.example/a|b`, `https://lit.example/é`} {
		if _, err := Compile(`catch_all()`, []string{`forward("` + u + `")`}); err == nil {
			t.Errorf("%s was accepted", u)
		}
	}
}

// match_header reads each value's first MaxHeaderValueBytes bytes and a
// name's first MaxHeaderValues values.
func TestHeaderBounds(t *testing.T) {
	t.Parallel()
	r := mustCompile(t, "r", 0, `match_header("X-Long", ".*END")`, "stop()")
	if ok, _ := r.Match("a@x.example", hdr("X-Long", strings.Repeat("a", MaxHeaderValueBytes)+"END")); ok {
		t.Error("matched text past MaxHeaderValueBytes")
	}
	if ok, _ := r.Match("a@x.example", hdr("X-Long", strings.Repeat("a", MaxHeaderValueBytes-3)+"END")); !ok {
		t.Error("missed text within MaxHeaderValueBytes")
	}
	var kv []string
	for i := 0; i < MaxHeaderValues; i++ {
		kv = append(kv, "X-Long", "nothing")
	}
	if ok, _ := r.Match("a@x.example", hdr(append(kv, "X-Long", "END")...)); ok {
		t.Error("matched a value past MaxHeaderValues")
	}
	r = mustCompile(t, "r", 0, `match_recipient(".*@x.example")`, "stop()")
	if ok, _ := r.Match(strings.Repeat("a", MaxRecipientBytes)+"@x.example", nil); ok {
		t.Error("matched a recipient longer than MaxRecipientBytes")
	}
}
