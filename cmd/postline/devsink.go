package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"mime"
	"net/textproto"
	"os"
	"path/filepath"
	"time"

	"github.com/postline/postline/internal/smtptest"
)

// devSMTPSink runs a local SMTP server that accepts everything and prints
// one line per message (optionally saving each as an .eml file), so that
// sending can be tried end to end without a real mail server.
func setupSMTPSink(fs *flag.FlagSet) runFunc {
	listen := fs.String("listen", "127.0.0.1:2525", "`address` to listen on")
	dir := fs.String("dir", "", "save each message as DIR/N.eml in this `directory`")
	user := fs.String("user", "", "require AUTH with this `user` (and --password)")
	password := fs.String("password", "", "`password` for --user")
	return func(ctx context.Context, x *inv) error {
		return smtpSink(ctx, x.env, *listen, *dir, *user, *password)
	}
}

func smtpSink(ctx context.Context, e env, listen, dir, user, password string) error {
	cfg := smtptest.Config{}
	if user != "" {
		cfg.Auth = &smtptest.Credentials{User: user, Password: password}
	}
	sink, err := smtptest.Start(listen, cfg)
	if err != nil {
		return err
	}
	defer sink.Close()
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "SMTP sink listening on %s; Ctrl-C to stop\n", sink.Addr())
	for n := 1; ; n++ {
		msgs, err := sink.WaitForMessages(ctx, n)
		if err != nil {
			return nil // interrupted
		}
		m := msgs[n-1]
		h, _ := textproto.NewReader(bufio.NewReader(bytes.NewReader(m.Data))).ReadMIMEHeader()
		subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
		if err != nil {
			subject = h.Get("Subject")
		}
		fmt.Fprintf(e.stdout, "%s  %d bytes  MAIL FROM:<%s> RCPT TO:%v  Subject: %s\n",
			m.ReceivedAt.Format(time.TimeOnly), len(m.Data), m.From, m.To, subject)
		if dir != "" {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.eml", n)), m.Data, 0o644); err != nil {
				return err
			}
		}
	}
}
