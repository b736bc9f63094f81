package hostile

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/testutil"
)

// smtpRig is a rig whose serve also listens for submission (STARTTLS
// port, AUTH allowed before TLS on loopback) and inbound SMTP.
func smtpRig(t *testing.T, vars map[string]string) (r *rig, submission, inbound string) {
	t.Helper()
	submission, inbound = testutil.FreeAddr(t), testutil.FreeAddr(t)
	all := map[string]string{
		"POSTLINE_SUBMISSION_LISTEN":           submission,
		"POSTLINE_SUBMISSION_ALLOW_PLAIN_AUTH": "true",
		"POSTLINE_SMTP_LISTEN":                 inbound,
	}
	for k, v := range vars {
		all[k] = v
	}
	r = newRig(t, all)
	r.start()
	return r, submission, inbound
}

// dialFrom connects to addr from the loopback address src (127.0.0.0/8 is
// all ours, so one test can be many clients).
func dialFrom(src, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return d.Dial("tcp", addr)
}

// TestIdleConnections (finding 1): clients from many addresses open idle
// connections to the submission and inbound ports and say nothing. Each
// address holds at most --smtp-max-connections-per-ip (past it 421 4.7.0),
// each listener at most --smtp-max-connections: past it the session that
// has waited longest without authenticating is closed for the newcomer
// (the second outside review locked every tenant out of SMTP by holding
// the whole bound), and the API, /readyz and alice's sends go on.
func TestIdleConnections(t *testing.T) {
	t.Parallel()
	perIP, total := 20, 1000
	clients, each := scale(30, 1000), 25 // full: 25,000 connections a listener
	if !*full {
		total = 300
	}
	r, submission, inbound := smtpRig(t, map[string]string{
		"POSTLINE_SMTP_MAX_CONNECTIONS": fmt.Sprint(total),
	})
	var greeted, refused, other atomic.Int64
	var mu sync.Mutex
	type held struct {
		c   net.Conn
		src string
	}
	var conns []held
	defer func() {
		for _, h := range conns {
			h.c.Close()
		}
	}()
	var srcs []string
	for i := 0; i < clients; i++ {
		srcs = append(srcs, fmt.Sprintf("127.0.%d.%d", 1+i/250, 2+i%250))
	}
	r.underAttack(bounds{MaxRSSMiB: 300}, func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, src := range srcs {
			wg.Go(func() {
				for _, addr := range []string{submission, inbound} {
					for j := 0; j < each && ctx.Err() == nil; j++ {
						c, err := dialFrom(src, addr)
						if err != nil {
							other.Add(1)
							continue
						}
						c.SetReadDeadline(time.Now().Add(5 * time.Second))
						line, err := bufio.NewReader(c).ReadString('\n')
						switch {
						case strings.HasPrefix(line, "220"):
							greeted.Add(1)
							mu.Lock()
							conns = append(conns, held{c, src})
							mu.Unlock()
							continue
						case strings.HasPrefix(line, "421 4.7.0"), strings.HasPrefix(line, "421 4.3.2"):
							refused.Add(1)
						default:
							other.Add(1)
							t.Logf("from %s to %s: %q %v", src, addr, line, err)
						}
						c.Close()
					}
				}
			})
		}
		wg.Wait()
		// Hold them while the checks run.
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	})
	open, perAddr := 0, map[string]int{}
	for _, h := range conns {
		h.c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := h.c.Read(make([]byte, 1)); isTimeout(err) {
			open++
			perAddr[h.src]++
		}
	}
	t.Logf("%d greeted, %d refused with 421 4.7.0 or 4.3.2, %d other; %d open at the end", greeted.Load(), refused.Load(), other.Load(), open)
	if open > 2*total {
		t.Errorf("%d connections open over two listeners, want at most 2 x --smtp-max-connections = %d", open, 2*total)
	}
	for src, n := range perAddr {
		if n > 2*perIP {
			t.Errorf("%s holds %d connections over two listeners, want at most 2 x %d", src, n, perIP)
		}
	}
	if other.Load() > 0 {
		t.Errorf("want every connection greeted (220) or refused with 421 4.7.0 or 4.3.2, and no other answer; got %d other", other.Load())
	}
}

// TestIdleBeforeAuthIsClosed: a connection that never authenticates is
// closed after the short pre-authentication timeout.
func TestIdleBeforeAuthIsClosed(t *testing.T) {
	t.Parallel()
	_, submission, inbound := smtpRig(t, map[string]string{"POSTLINE_SMTP_PRE_AUTH_TIMEOUT": "1s"})
	for _, addr := range []string{submission, inbound} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		br.ReadString('\n') // greeting
		for {
			if _, err := br.ReadString('\n'); err != nil {
				break
			}
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: idle connection before AUTH still open after %v, want closed after about 1s", addr, d)
		}
	}
}

// smtpSession is a raw client session, for the attacks that misbehave on
// purpose.
type smtpSession struct {
	c  net.Conn
	br *bufio.Reader
}

func dialSMTP(src, addr string) (*smtpSession, error) {
	c, err := dialFrom(src, addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	s := &smtpSession{c: c, br: bufio.NewReader(c)}
	if _, err := s.reply(); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

// cmd sends a line and returns the reply (the last line of a multi-line
// one).
func (s *smtpSession) cmd(line string) (string, error) {
	if _, err := fmt.Fprintf(s.c, "%s\r\n", line); err != nil {
		return "", err
	}
	return s.reply()
}

func (s *smtpSession) reply() (string, error) {
	for {
		l, err := s.br.ReadString('\n')
		if err != nil {
			return l, err
		}
		if len(l) < 4 || l[3] != '-' {
			return strings.TrimRight(l, "\r\n"), nil
		}
	}
}

// login authenticates with AUTH PLAIN.
func (s *smtpSession) login(user, key string) error {
	if r, err := s.cmd("EHLO attacker.example"); err != nil || !strings.HasPrefix(r, "250") {
		return fmt.Errorf("EHLO: %q %v", r, err)
	}
	tok := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + key))
	if r, err := s.cmd("AUTH PLAIN " + tok); err != nil || !strings.HasPrefix(r, "235") {
		return fmt.Errorf("AUTH: %q %v", r, err)
	}
	return nil
}

// TestUnfinishedData (finding 5): mallory's sessions each send a large
// message without the final dot and hang. The server spools past 1 MiB
// instead of holding it in memory, and removes the spool files when the
// sessions end.
func TestUnfinishedData(t *testing.T) {
	t.Parallel()
	sessions, mib := 20, scale(16, 30)
	r, submission, _ := smtpRig(t, nil)
	chunk := []byte(strings.Repeat("an unfinished message line, never ended by a dot ......\r\n", 1<<10)) // 58 KiB
	var started atomic.Int64
	var open []*smtpSession
	var mu sync.Mutex
	r.underAttack(bounds{MaxRSSMiB: 300}, func(ctx context.Context) {
		var wg sync.WaitGroup
		for i := 0; i < sessions; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := dialSMTP("127.0.0.1", submission)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				mu.Lock()
				open = append(open, s)
				mu.Unlock()
				if err := s.login(attacker, r.keys[attacker]); err != nil {
					t.Errorf("session: %v", err)
					return
				}
				s.cmd("MAIL FROM:<x@" + attackerDomin + ">")
				s.cmd("RCPT TO:<victim@" + rcptDomain + ">")
				if rep, _ := s.cmd("DATA"); !strings.HasPrefix(rep, "354") {
					t.Errorf("DATA: %q", rep)
					return
				}
				started.Add(1)
				fmt.Fprintf(s.c, "From: x@%s\r\nTo: victim@%s\r\nSubject: big\r\n\r\n", attackerDomin, rcptDomain)
				for sent := 0; sent < mib<<20 && ctx.Err() == nil; sent += len(chunk) {
					if _, err := s.c.Write(chunk); err != nil {
						t.Errorf("writing DATA: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(time.Second) // the server reads what is in flight
	})
	if started.Load() != int64(sessions) {
		t.Fatalf("%d of %d sessions reached DATA", started.Load(), sessions)
	}
	for _, s := range open {
		s.c.Close()
	}
	// Every spool file is removed once its session is gone.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := spoolFiles(t, r.vars["POSTLINE_DATA_DIR"])
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool files left after the sessions ended: %q", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// spoolFiles lists the files under dir other than the database's and the
// keys: what a spooled message leaves behind.
func spoolFiles(t *testing.T, dir string) []string {
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, "postline.db") || strings.HasSuffix(name, ".key") || strings.HasSuffix(name, ".pem") || strings.HasSuffix(name, ".crt") {
			return nil
		}
		left = append(left, p)
		return nil
	})
	return left
}
