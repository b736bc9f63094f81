package tracking

import "strings"

// Heuristics for requests that are not a person reading or clicking.
// Such requests are still logged (details.bot says why) but never take a
// delivery's "first" marker, so details.first means the first
// human-looking open or click. They are heuristics: a scanner that
// pretends to be a browser is counted as a person, and a person behind an
// unusual client may be flagged.
//
//   - No User-Agent at all: real mail clients and browsers always send one.
//   - A User-Agent naming an automated client: crawlers ("bot", "spider",
//     "crawler"), link scanners of mail security gateways (Barracuda,
//     Mimecast, Proofpoint, Microsoft Safe Links' "preview"), and HTTP
//     libraries (curl, wget, python-requests, Go-http-client, ...).
//   - HEAD requests are answered and not logged at all (Client.Probe).
//
// Opens through an image proxy that fetches on the reader's behalf when the
// message is opened (Gmail's GoogleImageProxy, Yahoo's proxy) are real
// opens: they are logged with details.proxy and count. Apple Mail Privacy
// Protection prefetches every image at delivery with an ordinary browser
// User-Agent, so those opens cannot be told apart here and do count.
//
// Unsubscribing never happens on GET: the link leads to a confirmation
// page whose button POSTs, and the one-click header is a POST too, so a
// scanner following links cannot unsubscribe anyone.
var automatedAgents = []string{
	"bot", "spider", "crawler", "slurp", "preview", "scanner",
	"barracuda", "mimecast", "proofpoint", "safelinks", "fireeye", "trendmicro",
	"curl/", "wget/", "python-requests", "python-urllib", "go-http-client", "java/", "okhttp",
	"libwww-perl", "httpclient", "headlesschrome", "phantomjs",
}

var imageProxies = map[string]string{"googleimageproxy": "gmail", "yahoomailproxy": "yahoo"}

func automated(ua string) string {
	if strings.TrimSpace(ua) == "" {
		return "no_user_agent"
	}
	l := strings.ToLower(ua)
	for _, a := range automatedAgents {
		if strings.Contains(l, a) {
			return "user_agent:" + strings.TrimSuffix(a, "/")
		}
	}
	return ""
}

func imageProxy(ua string) string {
	l := strings.ToLower(ua)
	for k, v := range imageProxies {
		if strings.Contains(l, k) {
			return v
		}
	}
	return ""
}

func classifyOpen(c Client) string {
	if imageProxy(c.UserAgent) != "" {
		return ""
	}
	return automated(c.UserAgent)
}

func classifyClick(c Client) string { return automated(c.UserAgent) }
