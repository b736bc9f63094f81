package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// `postline route add|list|show|remove` through the built binary beside a
// running serve: a route added by the CLI is the API's, one added through
// the API is listed by the CLI in evaluation order, a removed one is gone
// for the API; refused input is exit 2 naming the flag the user typed.
func TestRouteCommandsThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"POSTLINE_DATA_DIR=" + dir}
	srv := startServe(t, env)
	srv.waitFor(t, "Try: curl")
	if code, _, errs := cli(t, dir, "user", "create", "alice"); code != 0 {
		t.Fatalf("user create: %s", errs)
	}
	code, keyOut, errs := cli(t, dir, "key", "create", "alice")
	if code != 0 {
		t.Fatalf("key create: %s", errs)
	}
	key := strings.TrimSpace(keyOut)
	api := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+srv.addr+path, strings.NewReader(body))
		req.SetBasicAuth("alice", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var v map[string]any
		json.Unmarshal(raw, &v)
		return resp.StatusCode, v
	}

	code, out, errs := runBinary(t, env, "route", "add", "alice", "--expression", `match_recipient("^support-(\d+)@alice\.example$")`,
		"--action", `forward("https://desk.alice.example/in?ticket=\1")`, "--action", "stop()", "--priority", "5", "--description", "Support")
	m := regexp.MustCompile(`^added route ([0-9a-f]{24}) for alice \(priority 5\)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("route add: exit %d, %q %q", code, out, errs)
	}
	id := m[1]
	status, got := api("GET", "/api/routes/"+id, "")
	data, _ := got["data"].(map[string]any)
	if status != 200 || data["priority"] != 5.0 || data["description"] != "Support" || data["expression"] != `match_recipient("^support-(\d+)@alice\.example$")` ||
		len(data["actions"].([]any)) != 2 || data["actions"].([]any)[0] != `forward("https://desk.alice.example/in?ticket=\1")` {
		t.Fatalf("the CLI's route through the API: %d %v", status, got)
	}
	status, got = api("POST", "/api/routes", `{"expression": "catch_all()", "actions": ["store()"], "priority": 1}`)
	if status != 201 {
		t.Fatalf("POST /api/routes: %d %v", status, got)
	}
	apiID := got["data"].(map[string]any)["id"].(string)

	code, out, errs = runBinary(t, env, "route", "list", "alice")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], apiID+"  1 ") || !strings.HasPrefix(lines[2], id+"  5 ") ||
		!strings.Contains(lines[2], `forward("https://desk.alice.example/in?ticket=\1") | stop()`) {
		t.Fatalf("route list: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ = runBinary(t, env, "route", "show", apiID); code != 0 || !strings.Contains(out, "route "+apiID+" of alice") ||
		!strings.Contains(out, "expression   catch_all()") || !strings.Contains(out, "action       store()") {
		t.Fatalf("route show: exit %d\n%s", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"route", "add", "alice", "--expression", `match_recipient("a(?=b)")`, "--action", "stop()"}, 2, "--expression: match_recipient: lookahead"},
		{[]string{"route", "add", "alice", "--expression", "catch_all()", "--action", "stop()", "--action", "drop()"}, 2, `--action "drop()": unknown action "drop"`},
		{[]string{"route", "add", "alice", "--expression", "catch_all()"}, 2, "--action: At least one action is required"},
		{[]string{"route", "add", "alice", "--expression", "catch_all()", "--action", "stop()", "--priority", "-3"}, 2, "--priority: The priority must be"},
		{[]string{"route", "add", "nobody", "--expression", "catch_all()", "--action", "stop()"}, 1, `account "nobody" not found`},
		{[]string{"route", "show", "ffffffffffffffffffffffff"}, 1, "route not found"},
		{[]string{"route", "remove", "nonsense"}, 1, "route not found"},
	} {
		if code, out, errs := runBinary(t, env, c.args...); code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("postline %s: exit %d, %q %q; want exit %d with %q", strings.Join(c.args, " "), code, out, errs, c.code, c.want)
		}
	}

	if code, out, errs = runBinary(t, env, "route", "remove", id); code != 0 || out != "removed route "+id+"\n" {
		t.Fatalf("route remove: exit %d %q %q", code, out, errs)
	}
	if status, _ := api("GET", "/api/routes/"+id, ""); status != 404 {
		t.Errorf("GET of the removed route: %d", status)
	}
	if status, got := api("GET", "/api/routes", ""); status != 200 || got["count"] != 1.0 {
		t.Errorf("after the remove: %d %v", status, got)
	}
}
