package gateway

import (
	"io"
	"net"
	"testing"
)

// An errorConn keeps a request's start only while net/http parses it: a
// handler that runs (parsed) drops it and keeps none of the body, an
// answer starts the next request's, and a parse error after it is read in
// that request's dialect.
func TestErrorConn_KeepsTheHeadOnlyUntilParsed(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &errorConn{Conn: server}
	buf := make([]byte, 64)
	send := func(s string) {
		t.Helper()
		go io.WriteString(client, s) //nolint:errcheck // read below
		if _, err := io.ReadFull(c, buf[:len(s)]); err != nil {
			t.Fatal(err)
		}
	}
	kept := func() string {
		if c.head == nil {
			return ""
		}
		return string(*c.head)
	}

	send("POST /v1/chat/completions HTTP/1.1\r\n")
	if got := kept(); got != "POST /v1/chat/completions HTTP/1.1\r\n" {
		t.Fatalf("while parsing, kept %q", got)
	}
	c.parsed()
	send(`{"messages":[]}`)
	if c.head != nil {
		t.Fatalf("after the handler started, kept %q: want nothing", kept())
	}
	go io.Copy(io.Discard, client) //nolint:errcheck // drains the answers
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	send("POST /v1/messages HTTP/1.1\r\n")
	if got := kept(); got != "POST /v1/messages HTTP/1.1\r\n" {
		t.Fatalf("the next request's start: kept %q", got)
	}
	if d := headDialect(*c.head); d != anthropicDialect {
		t.Fatalf("the next request reads as %v, want anthropic", d)
	}
	if _, err := c.Write([]byte("HTTP/1.1 400 Bad Request" + plainErrorHeaders + "400 Bad Request")); err != nil {
		t.Fatal(err)
	}
	if c.head != nil || c.state != headFresh {
		t.Fatalf("after the error: head %q, state %d; want none, fresh", kept(), c.state)
	}
}
