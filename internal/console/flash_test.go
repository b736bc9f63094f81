package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A flash is read back only with the session it was written for, once;
// a tampered one says nothing.
func TestFlashIsTheSessionsAlone(t *testing.T) {
	t.Parallel()
	c := &Console{}
	request := func(session string, flashCookie *http.Cookie) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: c.cookieName(), Value: session})
		if flashCookie != nil {
			r.AddCookie(flashCookie)
		}
		return r
	}
	w := httptest.NewRecorder()
	want := flash{Notice: "API key created.", Secret: "pl_secret"}
	c.setFlash(w, request("token-a", nil), want)
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != "postline-flash" || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode ||
		cookies[0].MaxAge != flashMaxAge {
		t.Fatalf("flash cookie %+v", cookies)
	}
	sealed := cookies[0]
	if got := c.takeFlash(httptest.NewRecorder(), request("token-b", sealed)); got != (flash{}) {
		t.Errorf("another session read the flash: %+v", got)
	}
	tampered := *sealed
	b := []byte(sealed.Value)
	if i := len(b) / 2; b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	tampered.Value = string(b)
	if got := c.takeFlash(httptest.NewRecorder(), request("token-a", &tampered)); got != (flash{}) {
		t.Errorf("a tampered flash was read: %+v", got)
	}
	w = httptest.NewRecorder()
	if got := c.takeFlash(w, request("token-a", sealed)); got != want {
		t.Errorf("the session's own flash: %+v, want %+v", got, want)
	}
	if cleared := w.Result().Cookies(); len(cleared) != 1 || cleared[0].MaxAge >= 0 {
		t.Errorf("taking the flash does not clear it: %+v", cleared)
	}
}
