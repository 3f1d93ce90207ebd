// Package jsonscan reads JSON tokens from a string without reflection, for
// decoding fast paths that fall back to encoding/json on anything they do
// not handle.
//
// Every method skips leading white space and reports false when the input
// is not what it handles: false means "not handled here", never "invalid";
// the caller then decodes the same input with encoding/json, which gives
// the answer (or the error). What a method accepts, encoding/json accepts
// and reads the same way; the fuzz tests of the fast paths built on it
// hold them to that.
//
//	s := jsonscan.Scanner{S: `{"model":"m","n":1}`}
//	var model string
//	var n int
//	ok := s.Object(func(key string) bool {
//		switch key {
//		case "model":
//			return s.NullableString(&model)
//		case "n":
//			return s.Int(&n)
//		}
//		return s.SkipValue()
//	}) && s.End()
package jsonscan
