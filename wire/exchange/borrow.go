package exchange

import (
	"strings"
	"unsafe"
)

// Borrow returns b's bytes as a string, without a copy. The string is only
// as lasting as b's contents: it is for data a decoder reads in place (an
// event's data from sse.Reader.NextView) and hands out as a chunk that
// borrows it (see llm.Chunk), never for a string kept after b is reused.
func Borrow(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Own returns v, which may borrow a buffer or pin a whole event, as a
// string of its own: *last when v equals it (a stream names the same id
// and model in every chunk), else a copy kept in *last. A decoder keeps
// one *last per field it hands out in each chunk.
func Own(last *string, v string) string {
	if v != *last {
		*last = strings.Clone(v)
	}
	return *last
}
