// Package responses speaks OpenAI's Responses API (POST {base}/responses),
// the dialect config names "openai-responses": the one some models are
// served in alone (OpenAI's pro and codex models) and that other providers
// copy. It encodes llm.Request as a Responses request (instructions, input
// items, function tools, text.format, reasoning.effort, and store: false
// unless Client.Store says otherwise), decodes the response object and its
// event stream (output items; reasoning items are left opaque, never read
// as text; usage with cached and reasoning tokens), and turns every
// failure of the provider into an llm.ProviderError: an HTTP error body
// (ParseError), and inside a 200 stream a response.failed event, an error
// event (ParseStreamError) or a response.incomplete refused by the content
// filter. A response.incomplete at max_output_tokens is an answer cut at
// its cap (llm.FinishLength), not a failure. Any other failure is a
// transport error.
//
//	c := &responses.Client{APIKey: os.Getenv("OPENAI_API_KEY")}
//	req := &llm.Request{Model: "gpt-5-mini",
//		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}}
//	resp, err := c.Complete(ctx, req)
//
//	st, err := c.Stream(ctx, req)
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	for {
//		ch, err := st.Next()
//		if err == io.EOF {
//			break // response.completed (or response.incomplete) came
//		}
//		if err != nil {
//			return err // response.failed, an error event, a cut, ...
//		}
//		fmt.Print(ch.Content)
//	}
//
// A request whose Raw is in this dialect (a client of detour's Responses
// surface) is sent as its client wrote it, only model and stream set by
// detour (and store: false when the client said nothing of it), and the
// answer keeps the provider's body, or each stream event, as it came:
// reasoning items and every field detour does not read go back to the
// client unchanged, and from it to a target of this dialect only.
package responses
