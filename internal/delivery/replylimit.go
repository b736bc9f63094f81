package delivery

import (
	"fmt"
	"net"
)

// maxReply bounds the bytes of one SMTP reply, all its lines together.
// RFC 5321 §4.5.3.1.5 bounds a reply line at 512 bytes; real multi-line
// replies (EHLO's) are a few hundred bytes. go-smtp bounds each line at
// 2,000 bytes but not their number, and joins the lines by repeated
// concatenation: a hostile server sending "250-" lines without end would
// hold a worker and grow its memory (and burn a core) until the command
// timeout. The bound makes such a reply an error after maxReply bytes.
const maxReply = 32 << 10

// errReplyTooLong is the error of a reply longer than maxReply.
var errReplyTooLong = fmt.Errorf("server reply longer than %d bytes", maxReply)

// LimitReplies returns conn with each SMTP reply read from it bounded at
// 32 KiB (an error past it), for clients that make their own go-smtp
// client on a connection to a remote server (the validator's probe).
func LimitReplies(conn net.Conn) net.Conn { return &replyLimitConn{Conn: conn} }

// replyLimitConn counts the bytes of the reply being read from a server
// and fails the read once one exceeds maxReply. A reply ends with a line
// whose fourth byte is not '-' (RFC 5321 §4.2.1).
type replyLimitConn struct {
	net.Conn
	n       int  // bytes of the reply being read
	lineLen int  // bytes of the current line
	more    bool // the current line's fourth byte is '-'
}

func (c *replyLimitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	for _, b := range p[:n] {
		c.n++
		if c.n > maxReply {
			return 0, errReplyTooLong
		}
		c.lineLen++
		switch {
		case b == '\n':
			if !c.more {
				c.n = 0 // the last line of the reply
			}
			c.lineLen, c.more = 0, false
		case c.lineLen == 4:
			c.more = b == '-'
		}
	}
	return n, err
}
