package hostile

import (
	"context"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelSignIns (finding 6): wrong passwords for alice's login sent
// all at once, no login needed. At most --auth-attempts-per-login (10)
// are checked (401), the rest are refused before any hashing (429), and
// memory stays bounded because at most --password-check-concurrency
// hashes run at once.
func TestParallelSignIns(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	cmd := exec.Command(r.bin, "user", "password", victim)
	cmd.Env = r.env()
	cmd.Stdin = strings.NewReader("correct horse battery staple\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("user password: %v %s", err, out)
	}
	r.start()
	guesses := scale(150, 1000)
	var checked, limited, other atomic.Int64
	r.underAttack(bounds{MaxRSSMiB: 300}, func(ctx context.Context) {
		c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < guesses; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				form := url.Values{"login": {victim}, "secret": {"wrong password number one"}}
				req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+r.addr+"/sign-in", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := c.Do(req)
				if err != nil {
					other.Add(1)
					return
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case 401:
					checked.Add(1)
				case 429:
					limited.Add(1)
				default:
					other.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
	})
	t.Logf("%d checked (401), %d refused (429), %d other", checked.Load(), limited.Load(), other.Load())
	if checked.Load() > 10 {
		t.Errorf("%d wrong passwords checked for one login, want at most --auth-attempts-per-login = 10", checked.Load())
	}
	if other.Load() > 0 || checked.Load()+limited.Load() != int64(guesses) {
		t.Errorf("want every guess answered 401 or 429; %d other answers", other.Load())
	}
}
