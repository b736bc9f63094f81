package console

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/postline/postline/internal/receiving"
)

// mailFramePolicy is the Content Security Policy of a message's HTML in
// its frame: no script runs, nothing loads from the network (tracking
// pixels and remote images stay dark) unless remote, which lets images
// load over https and nothing else; the document sits in a sandbox with
// an origin of its own, framed only by the console's own pages.
func mailFramePolicy(remote bool) string {
	img := "img-src data:"
	if remote {
		img += " https:"
	}
	return "default-src 'none'; script-src 'none'; " + img + "; style-src 'unsafe-inline'; font-src data:; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox"
}

// serveMailHTML answers a message's HTML for its page's frame, under
// mailFramePolicy; ?remote=1 is the reader's choice to load remote
// images.
func serveMailHTML(w http.ResponseWriter, r *http.Request, html string) {
	h := w.Header()
	h.Set("Content-Security-Policy", mailFramePolicy(r.URL.Query().Get("remote") == "1"))
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(html)) //nolint:errcheck // the client may be gone
}

// mailFrame is what a message page's frame partial needs: the frame's
// source, and the link that reloads the page with remote images or
// without them.
type mailFrame struct {
	Show   bool   // the message has an HTML body
	Src    string // the frame's source
	Remote bool   // remote images are loaded
	Toggle string // the page with the other choice
}

// newMailFrame is the frame of the page at r whose HTML is served at
// base+"/html", with q (the page's other parameters) kept on both.
func newMailFrame(r *http.Request, base string, q url.Values, show bool) mailFrame {
	remote := r.URL.Query().Get("remote") == "1"
	src, toggle := url.Values{}, url.Values{}
	for k, v := range q {
		src[k], toggle[k] = v, v
	}
	if remote {
		src.Set("remote", "1")
	} else {
		toggle.Set("remote", "1")
	}
	return mailFrame{Show: show, Src: base + "/html" + query(src), Remote: remote, Toggle: r.URL.Path + query(toggle)}
}

func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// maxInlineImage bounds an inline image turned into a data: URL.
const maxInlineImage = 2 << 20

// maxInlinedBytes bounds what the data: URLs add to one message's HTML,
// every reference counted: an image referenced a hundred thousand times
// (the sender's HTML) would otherwise grow the page by as many copies,
// gigabytes held at once in the server. Images past it stay unshown.
const maxInlinedBytes = 16 << 20

// inlineImages replaces cid: references to image parts with data: URLs,
// the only images the frame's policy always lets through, adding at most
// maxInlinedBytes to html.
func inlineImages(html string, raw []byte, atts []receiving.Attachment) string {
	budget := maxInlinedBytes
	for _, a := range atts {
		ref := "cid:" + a.ContentID
		if a.ContentID == "" || !strings.HasPrefix(a.ContentType, "image/") || a.Size > maxInlineImage ||
			!strings.Contains(html, ref) {
			continue
		}
		_, body, ok := receiving.Part(raw, a.Index)
		if !ok {
			continue
		}
		prefix := "data:" + a.ContentType + ";base64,"
		grow := strings.Count(html, ref) * (len(prefix) + base64.StdEncoding.EncodedLen(len(body)) - len(ref))
		if grow > budget {
			continue
		}
		budget -= grow
		html = strings.ReplaceAll(html, ref, prefix+base64.StdEncoding.EncodeToString(body))
	}
	return html
}
