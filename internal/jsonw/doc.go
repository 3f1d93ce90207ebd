// Package jsonw appends JSON values to byte slices, writing exactly what
// encoding/json writes for them with HTML escaping off: the encoder of the
// hot paths, which build their JSON by hand into reused buffers.
//
//	b = append(b, `{"model":`...)
//	b = jsonw.String(b, model)
//	b = append(b, `,"temperature":`...)
//	b, err = jsonw.Float(b, 0.7)
package jsonw
