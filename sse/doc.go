// Package sse reads and writes server-sent events (text/event-stream), the
// framing every LLM provider streams in; it depends on the standard library
// only.
//
//	r := sse.NewReader(resp.Body)
//	for {
//		ev, err := r.Next()
//		if err == io.EOF {
//			break
//		}
//		if err != nil {
//			return err
//		}
//		fmt.Println(ev.Event, ev.Data)
//	}
//
//	w := sse.NewWriter(rw) // rw is an http.ResponseWriter: each event is flushed
//	w.WriteData([]byte(`{"choices":[]}`))
//	w.WriteComment("ping")
package sse
