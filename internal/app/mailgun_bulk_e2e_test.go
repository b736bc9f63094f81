package app_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// mgBulkUpload posts body as the part named part of a Mailgun bulk list.
func mgBulkUpload(t *testing.T, env *apitest.Env, key, list, part, body string) *apitest.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile(part, "list.csv")
	io.WriteString(fw, body)
	mw.Close()
	return env.Do(apitest.Request{Method: "POST", Path: "/v4/address/validate/bulk/" + list, Auth: apitest.User{Login: "api", Key: key}.Auth(),
		Body: buf.Bytes(), Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
}

// mgGet fetches an absolute or relative URL with Mailgun's auth (none
// when key is "").
func mgGet(t *testing.T, env *apitest.Env, key, u string) (int, string, []byte) {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = env.URL + u
	}
	req, _ := http.NewRequest("GET", u, nil)
	if key != "" {
		req.Header.Set("Authorization", apitest.User{Login: "api", Key: key}.Auth())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// TestMailgunBulkValidationAPI: a list uploaded to
// /v4/address/validate/bulk/{list_id} runs as a list-cleaning job to
// "uploaded" with Mailgun's counts and summary; its CSV and JSON results
// (download_url) need the key and give each address Mailgun's verdict in
// input order; the lists page shows it; another account's list id is a
// 404, as is an unknown one; bad uploads are 400, an upload over the
// limit 413; a name in use is a 400 until DELETE frees it.
func TestMailgunBulkValidationAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, func(c *config.Config) { c.RateValidationPerHour, c.RateDomainPerMinute = 100000, 100000 })
		env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
		env.DNS.AddA("mx.acme-mail.com", "127.0.0.1")
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		auth := apitest.User{Login: "api", Key: alice.Key}.Auth()
		list := "email,name\njane@acme-mail.com,Jane\ninfo@acme-mail.com,Info\njoe@nx-corp.net,Joe\n" +
			"x@mailinator.com,Temp\nnot-an-address,Bad\njane+news@acme-mail.com,Jane again\n"
		want := []struct{ addr, result, risk string }{
			{"jane@acme-mail.com", "deliverable", "low"},
			{"info@acme-mail.com", "deliverable", "medium"},
			{"joe@nx-corp.net", "undeliverable", "high"},
			{"x@mailinator.com", "do_not_send", "high"},
			{"not-an-address", "undeliverable", "high"},
			{"jane+news@acme-mail.com", "deliverable", "low"},
		}
		resp := mgBulkUpload(t, env, alice.Key, "spring_list", "file", list)
		if resp.StatusCode != 202 || resp.JSON["id"] != "spring_list" || resp.JSON["message"] == nil {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := mgBulkUpload(t, env, alice.Key, "spring_list", "file", list); resp.StatusCode != 400 || !strings.Contains(resp.JSON["message"].(string), "list_id") {
			t.Errorf("a name in use: %d %s, want 400 naming list_id", resp.StatusCode, resp.Body)
		}
		var job map[string]any
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			resp := env.Do(apitest.Request{Method: "GET", Path: "/v4/address/validate/bulk/spring_list", Auth: auth})
			if resp.StatusCode != 200 {
				t.Fatalf("get: %d %s", resp.StatusCode, resp.Body)
			}
			job = resp.JSON
			if job["status"] == "uploaded" || time.Now().After(deadline) {
				break
			}
			if s := job["status"]; s != "created" && s != "processing" {
				t.Fatalf("status %v while running", s)
			}
		}
		sum, _ := job["summary"].(map[string]any)
		if job["status"] != "uploaded" || job["id"] != "spring_list" || job["quantity"] != 6.0 || job["records_processed"] != 6.0 || sum == nil {
			t.Fatalf("job: %v", job)
		}
		results, risks := map[string]float64{}, map[string]float64{}
		for _, w := range want {
			results[w.result]++
			risks[w.risk]++
		}
		for k, v := range sum["result"].(map[string]any) {
			if v != results[k] {
				t.Errorf("summary.result.%s = %v, want %v (%v)", k, v, results[k], sum)
			}
		}
		for k, v := range sum["risk"].(map[string]any) {
			if v != risks[k] {
				t.Errorf("summary.risk.%s = %v, want %v (%v)", k, v, risks[k], sum)
			}
		}
		// The results, behind the key.
		urls := job["download_url"].(map[string]any)
		code, ctype, body := mgGet(t, env, alice.Key, urls["csv"].(string))
		rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
		if code != 200 || !strings.HasPrefix(ctype, "text/csv") || err != nil || len(rows) != 7 || rows[0][0] != "address" || rows[0][1] != "result" {
			t.Fatalf("CSV: %d %s %v %q", code, ctype, err, body)
		}
		for i, w := range want {
			if rows[i+1][0] != w.addr || rows[i+1][1] != w.result || rows[i+1][2] != w.risk {
				t.Errorf("CSV row %d = %v, want %v", i+1, rows[i+1], w)
			}
		}
		code, _, body = mgGet(t, env, alice.Key, urls["json"].(string))
		var items []map[string]any
		if err := json.Unmarshal(body, &items); code != 200 || err != nil || len(items) != len(want) {
			t.Fatalf("JSON: %d %v %s", code, err, body)
		}
		for i, w := range want {
			if items[i]["address"] != w.addr || items[i]["result"] != w.result || items[i]["risk"] != w.risk {
				t.Errorf("JSON item %d = %v, want %v", i, items[i], w)
			}
		}
		if items[5]["root_address"] != "jane@acme-mail.com" || items[3]["is_disposable_address"] != true || items[1]["is_role_address"] != true {
			t.Errorf("JSON fields: %v", items)
		}
		for _, key := range []string{"", "pl_wrong"} {
			if code, _, body := mgGet(t, env, key, urls["csv"].(string)); code != 401 {
				t.Errorf("CSV with key %q: %d %s", key, code, body)
			}
		}
		// The lists page.
		resp = env.Do(apitest.Request{Method: "GET", Path: "/v4/address/validate/bulk", Auth: auth})
		jobs, _ := resp.JSON["jobs"].([]any)
		if resp.StatusCode != 200 || len(jobs) != 1 || jobs[0].(map[string]any)["id"] != "spring_list" || resp.JSON["total"] != 1.0 {
			t.Errorf("list: %d %s", resp.StatusCode, resp.Body)
		}
		// Another account's list, an unknown one.
		bobAuth := apitest.User{Login: "api", Key: bob.Key}.Auth()
		for _, c := range []struct{ method, path, auth string }{
			{"GET", "/v4/address/validate/bulk/spring_list", bobAuth},
			{"DELETE", "/v4/address/validate/bulk/spring_list", bobAuth},
			{"GET", "/v4/address/validate/bulk/spring_list/results.csv", bobAuth},
			{"GET", "/v4/address/validate/bulk/no_such_list", auth},
			{"DELETE", "/v4/address/validate/bulk/no_such_list", auth},
			{"GET", "/v4/address/validate/bulk/spring_list/results.xml", auth},
		} {
			if resp := env.Do(apitest.Request{Method: c.method, Path: c.path, Auth: c.auth}); resp.StatusCode != 404 || resp.JSON["message"] == nil {
				t.Errorf("%s %s: %d %s, want 404", c.method, c.path, resp.StatusCode, resp.Body)
			}
		}
		if resp := env.Do(apitest.Request{Method: "GET", Path: "/v4/address/validate/bulk", Auth: bobAuth}); resp.StatusCode != 200 || len(resp.JSON["jobs"].([]any)) != 0 {
			t.Errorf("bob's lists: %d %s", resp.StatusCode, resp.Body)
		}
		// Bad uploads.
		for _, c := range []struct{ part, body string }{{"list", list}, {"file", ""}, {"file", "email\n"}} {
			if resp := mgBulkUpload(t, env, alice.Key, "bad_list", c.part, c.body); resp.StatusCode != 400 || !strings.HasPrefix(resp.JSON["message"].(string), c.part+":") {
				t.Errorf("upload %s %q: %d %s, want 400", c.part, c.body, resp.StatusCode, resp.Body)
			}
		}
		// 100-byte lines: past the upload limit (64 MiB) before the line limit.
		line := "someone@acme-mail.com," + strings.Repeat("n", 77) + "\n"
		huge := strings.Repeat(line, (64<<20)/len(line)+1000)
		if resp := mgBulkUpload(t, env, alice.Key, "huge_list", "file", huge); resp.StatusCode != 413 || resp.JSON["message"] == nil {
			t.Errorf("upload over the limit: %d %.200s, want 413", resp.StatusCode, resp.Body)
		}
		for _, l := range []string{"bad_list", "huge_list"} {
			if resp := env.Do(apitest.Request{Method: "GET", Path: "/v4/address/validate/bulk/" + l, Auth: auth}); resp.StatusCode != 404 {
				t.Errorf("%s after a refused upload: %d %s", l, resp.StatusCode, resp.Body)
			}
		}
		// DELETE frees the name; the job stays in Postline's own list.
		resp = env.Do(apitest.Request{Method: "DELETE", Path: "/v4/address/validate/bulk/spring_list", Auth: auth})
		if resp.StatusCode != 200 || resp.JSON["message"] == nil {
			t.Fatalf("delete: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := env.Do(apitest.Request{Method: "GET", Path: "/v4/address/validate/bulk/spring_list", Auth: auth}); resp.StatusCode != 404 {
			t.Errorf("after delete: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/email/validate/jobs", Auth: alice.Auth()}); resp.StatusCode != 200 || len(resp.JSON["data"].([]any)) != 1 {
			t.Errorf("Postline's jobs after delete: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := mgBulkUpload(t, env, alice.Key, "spring_list", "file", "a@acme-mail.com\n"); resp.StatusCode != 202 {
			t.Errorf("the name again after delete: %d %s", resp.StatusCode, resp.Body)
		}
	})
}

// TestMailgunSDKValidation: mailgun.js's mg.validate.get and
// mg.validate.multipleValidation (create, list, get, destroy) against
// Postline: Mailgun's fields come through the SDK's own parsing.
func TestMailgunSDKValidation(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	e.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	e.DNS.AddA("mx.acme-mail.com", "127.0.0.1")
	res := mailgunSDK(t, e, e.user.Key, []map[string]any{
		{"call": "validate.get", "address": "jane@acme-mail.com"},
		{"call": "validate.get", "address": "x@mailinator.com"},
		{"call": "validate.get", "address": ""},
		{"call": "multipleValidation.create", "listId": "sdk_list", "file": "jane@acme-mail.com\ninfo@acme-mail.com\njoe@nx-corp.net\n"},
		{"call": "multipleValidation.get", "listId": "sdk_list", "until": "uploaded"},
		{"call": "multipleValidation.list"},
	})
	var v struct {
		Address    string   `json:"address"`
		Result     string   `json:"result"`
		Risk       string   `json:"risk"`
		Reason     []string `json:"reason"`
		Disposable bool     `json:"is_disposable_address"`
	}
	if json.Unmarshal(res[0].Result, &v); !res[0].OK || v.Address != "jane@acme-mail.com" || v.Result != "deliverable" || v.Risk != "low" {
		t.Errorf("validate.get: %+v %s", res[0], res[0].Result)
	}
	if json.Unmarshal(res[1].Result, &v); !res[1].OK || v.Result != "do_not_send" || !v.Disposable || len(v.Reason) != 1 {
		t.Errorf("validate.get disposable: %+v %s", res[1], res[1].Result)
	}
	if res[2].OK || res[2].Status != 400 {
		t.Errorf("validate.get without an address: %+v", res[2])
	}
	var created struct {
		ID     string `json:"id"`
		Status int    `json:"status"`
	}
	if json.Unmarshal(res[3].Result, &created); !res[3].OK || created.ID != "sdk_list" || created.Status != 202 {
		t.Errorf("multipleValidation.create: %+v %s", res[3], res[3].Result)
	}
	var job struct {
		ID               string `json:"id"`
		Status           string `json:"status"`
		Quantity         int    `json:"quantity"`
		RecordsProcessed int    `json:"recordsProcessed"`
		DownloadURL      struct{ CSV, JSON string }
		Summary          struct {
			Result map[string]int `json:"result"`
			Risk   map[string]int `json:"risk"`
		} `json:"summary"`
	}
	if json.Unmarshal(res[4].Result, &job); !res[4].OK || job.Status != "uploaded" || job.Quantity != 3 || job.RecordsProcessed != 3 ||
		job.Summary.Result["deliverable"] != 2 || job.Summary.Result["undeliverable"] != 1 || job.Summary.Risk["medium"] != 1 ||
		!strings.HasSuffix(job.DownloadURL.CSV, "/v4/address/validate/bulk/sdk_list/results.csv") {
		t.Errorf("multipleValidation.get: %+v %s", res[4], res[4].Result)
	}
	if code, _, body := mgGet(t, e.Env, e.user.Key, job.DownloadURL.JSON); code != 200 || !strings.Contains(string(body), `"address":"joe@nx-corp.net"`) {
		t.Errorf("the SDK's json download_url: %d %s", code, body)
	}
	var list struct {
		Total int              `json:"total"`
		Jobs  []map[string]any `json:"jobs"`
	}
	if json.Unmarshal(res[5].Result, &list); !res[5].OK || list.Total != 1 || len(list.Jobs) != 1 || list.Jobs[0]["id"] != "sdk_list" {
		t.Errorf("multipleValidation.list: %+v %s", res[5], res[5].Result)
	}
	// Then delete it: gone for get.
	res = append(res, mailgunSDK(t, e, e.user.Key, []map[string]any{
		{"call": "multipleValidation.destroy", "listId": "sdk_list"},
		{"call": "multipleValidation.get", "listId": "sdk_list"},
		{"call": "multipleValidation.get", "listId": "no_such_list"},
	})...)
	var destroyed struct {
		Message string `json:"message"`
		Status  int    `json:"status"`
	}
	if json.Unmarshal(res[6].Result, &destroyed); !res[6].OK || destroyed.Status != 200 || destroyed.Message == "" {
		t.Errorf("multipleValidation.destroy: %+v %s", res[6], res[6].Result)
	}
	for _, r := range res[7:] {
		if r.OK || r.Status != 404 {
			t.Errorf("multipleValidation.get of a deleted or unknown list: %+v", r)
		}
	}
}
