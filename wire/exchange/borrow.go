package exchange

import "unsafe"

// Borrow returns b's bytes as a string, without a copy. The string is only
// as lasting as b's contents: it is for data a decoder reads in place (an
// event's data from sse.Reader.NextView) and hands out as a chunk that
// borrows it (see llm.Chunk), never for a string kept after b is reused.
func Borrow(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
