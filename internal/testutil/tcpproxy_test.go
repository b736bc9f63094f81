package testutil

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echo serves a line echo on loopback.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, wait time.Duration) error {
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		err = errors.New("echoed " + line)
	}
	return err
}

func TestTCPProxyPausesCutsAndResumes(t *testing.T) {
	t.Parallel()
	p := NewTCPProxy(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, time.Second); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	p.Pause()
	if err := roundTrip(c, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("paused: got %v, want a read that times out", err)
	}
	fresh, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("paused: a new connection is accepted (and waits): %v", err)
	}
	defer fresh.Close()
	p.Resume()
	c.SetDeadline(time.Now().Add(time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("resumed: the held bytes should arrive: %q, %v", line, err)
	}
	if err := roundTrip(fresh, time.Second); err != nil {
		t.Fatalf("resumed: the connection made while paused works: %v", err)
	}

	p.Cut()
	if err := roundTrip(c, time.Second); err == nil {
		t.Fatal("cut: the open connection still answers")
	}
	if _, err := net.Dial("tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("cut: dial got %v, want connection refused", err)
	}
	p.Resume()
	again, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("resumed after a cut: %v", err)
	}
	defer again.Close()
	if err := roundTrip(again, time.Second); err != nil {
		t.Fatalf("resumed after a cut: %v", err)
	}
}
