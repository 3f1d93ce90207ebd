// Package anthropic speaks the Anthropic Messages API (POST /v1/messages):
// it encodes llm.Request (system prompt lifted out, turns merged to
// alternate, tool calls as tool_use and tool_result blocks), decodes
// responses and streams, and turns every failure of the provider, refusals
// included, into an llm.ProviderError (through ParseError and
// ParseStreamError); any other failure is a transport error.
//
//	c := &anthropic.Client{APIKey: os.Getenv("ANTHROPIC_API_KEY")}
//	req := &llm.Request{Model: "claude-haiku-4-5",
//		Messages: []llm.Message{
//			{Role: llm.RoleSystem, Content: "Be terse."},
//			{Role: llm.RoleUser, Content: "Say hi"},
//		}}
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
//			break // message_stop
//		}
//		if err != nil {
//			return err // event: error, errors.Is(err, llm.ErrStreamTruncated), ...
//		}
//		fmt.Print(ch.Content)
//	}
package anthropic
