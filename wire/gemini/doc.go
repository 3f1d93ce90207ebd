// Package gemini speaks Google's Gemini API (generateContent and
// streamGenerateContent): it encodes llm.Request, decodes answers and
// streams, and turns every failure of the provider, safety blocks in a 200
// included, into an llm.ProviderError (through ParseError and
// ParseStreamError); any other failure is a transport error. Its Client
// also embeds (llm.Embedder): one text through :embedContent, several
// through :batchEmbedContents, errors read as a chat call's are.
//
//	c := &gemini.Client{APIKey: os.Getenv("GEMINI_API_KEY")}
//	req := &llm.Request{Model: "gemini-2.5-flash",
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
//			break // the body ended after a finish reason
//		}
//		if err != nil {
//			return err // safety block, error chunk, errors.Is(err, llm.ErrStreamTruncated), ...
//		}
//		fmt.Print(ch.Content)
//	}
//
//	e, err := c.Embed(ctx, &llm.EmbedRequest{Model: "gemini-embedding-001", Input: []string{"a", "b"}})
//	// one exchange with :batchEmbedContents; e.Vectors[1] is the vector of "b"
package gemini
