package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
)

// flash is what a form's POST tells the page it redirects to (POST,
// redirect, GET: a reload never posts again): a notice of what happened,
// and a secret shown once (a new API key, a webhook's signing secret).
type flash struct {
	Notice string `json:"n,omitempty"`
	Secret string `json:"s,omitempty"`
}

// flashMaxAge bounds how long a flash waits for its page.
const flashMaxAge = 60 // seconds

func (c *Console) flashCookie() string { return c.cookieName() + "-flash" }

// flashKey is the flash's AES-256-GCM key, derived from the session's
// token: only that browser's session can read its flash (the server keeps
// only the token's hash, so the database cannot), and nobody can write
// one for it.
func flashKey(sessionToken string) cipher.AEAD {
	k := sha256.Sum256([]byte("postline console flash\x00" + sessionToken))
	b, _ := aes.NewCipher(k[:]) // a 32-byte key never fails
	aead, _ := cipher.NewGCM(b) // nor does GCM over AES
	return aead
}

// setFlash keeps f for the next page of r's session.
func (c *Console) setFlash(w http.ResponseWriter, r *http.Request, f flash) {
	ck, err := r.Cookie(c.cookieName())
	if err != nil {
		return
	}
	plain, err := json.Marshal(f)
	if err != nil {
		return
	}
	aead := flashKey(ck.Value)
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce) //nolint:errcheck // crypto/rand never fails on supported platforms
	sealed := aead.Seal(nonce, nonce, plain, nil)
	http.SetCookie(w, &http.Cookie{Name: c.flashCookie(), Value: base64.RawURLEncoding.EncodeToString(sealed), Path: "/",
		MaxAge: flashMaxAge, HttpOnly: true, Secure: c.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
}

// takeFlash reads the flash r carries for its session and clears it.
func (c *Console) takeFlash(w http.ResponseWriter, r *http.Request) flash {
	fc, err := r.Cookie(c.flashCookie())
	if err != nil {
		return flash{}
	}
	http.SetCookie(w, &http.Cookie{Name: c.flashCookie(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: c.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
	ck, err := r.Cookie(c.cookieName())
	if err != nil {
		return flash{}
	}
	sealed, err := base64.RawURLEncoding.DecodeString(fc.Value)
	aead := flashKey(ck.Value)
	if err != nil || len(sealed) < aead.NonceSize() {
		return flash{}
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], nil)
	var f flash
	if err != nil || json.Unmarshal(plain, &f) != nil {
		return flash{}
	}
	return f
}

// redirect answers a form's POST: a notice (and a secret) for the page,
// then that page.
func (c *Console) redirect(w http.ResponseWriter, r *http.Request, to string, f flash) {
	if f != (flash{}) {
		c.setFlash(w, r, f)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// flashKeyCtx carries the flash a page took to its render.
type flashKeyCtx struct{}

func withFlash(r *http.Request, f flash) *http.Request {
	if f == (flash{}) {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), flashKeyCtx{}, f))
}

func flashOf(r *http.Request) flash {
	f, _ := r.Context().Value(flashKeyCtx{}).(flash)
	return f
}
