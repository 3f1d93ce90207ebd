package redisstore

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards a loopback port to a Redis server, and can cut the link
// (a partition: this side is refused, the server keeps its data) and heal it.
type proxy struct {
	t      testing.TB
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

// startProxy starts a proxy to target; it is cut when t ends.
func startProxy(t testing.TB, target string) *proxy {
	p := &proxy{t: t, addr: freeAddr(t), target: target, conns: make(map[net.Conn]struct{})}
	p.heal()
	t.Cleanup(p.cut)
	return p
}

// heal listens again on the proxy's port.
func (p *proxy) heal() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection through it.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}
