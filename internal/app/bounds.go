package app

import (
	"net"
	"time"

	"github.com/postline/postline/internal/connlimit"
	"github.com/postline/postline/internal/spool"
)

// smtpConns are the bounds of every SMTP listener (inbound, submission).
func (a *App) smtpConns() connlimit.Config {
	c := a.Config
	return connlimit.Config{Max: c.SMTPMaxConnections, PerIP: c.SMTPMaxConnectionsPerIP,
		Timeouts: &connlimit.Timeouts{First: c.SMTPPreAuthTimeout, Idle: c.SMTPCommandTimeout}}
}

// boundHTTP bounds the API's listener. There is no per-address bound: a
// reverse proxy in front would be one address for every client.
func (a *App) boundHTTP(ln net.Listener) net.Listener {
	return connlimit.New(ln, connlimit.Config{Max: a.Config.HTTPMaxConnections, Name: "http", Logger: a.Logger})
}

// staleSpool is how long a spool file may go unwritten before a starting
// process removes it: longer than any live session lets a client pause.
const staleSpool = 2 * time.Hour

// sweepSpool removes the spool files a killed process left behind.
func (a *App) sweepSpool() {
	n, err := spool.Sweep(a.Config.SpoolDir(), staleSpool)
	if err != nil {
		a.Logger.Warn("spool: cleaning the spool directory", "dir", a.Config.SpoolDir(), "error", err)
	}
	if n > 0 {
		a.Logger.Info("spool: removed files left by an earlier process", "dir", a.Config.SpoolDir(), "files", n)
	}
}
