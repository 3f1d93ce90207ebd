// Package wiretest holds the test scaffolding the wire adapters' tests
// share: reading stream fixtures, draining a stream, checking a stream
// error, serving recorded events from a test server, a server that hangs,
// fuzz seeds and golden files. It is for tests only.
//
//	st, err := openai.DecodeStream(resp)
//	...
//	chunks, end := wiretest.Drain(t, st)
//	pe := wiretest.WantStreamError(t, end, "openai")
package wiretest
