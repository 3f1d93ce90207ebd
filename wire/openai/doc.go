// Package openai speaks the OpenAI chat completions dialect, which OpenAI,
// Groq, OpenRouter, DeepSeek, Together, Mistral, Cerebras, Fireworks, xAI,
// Ollama, vLLM and llama.cpp all serve: it encodes llm.Request, decodes
// responses and streams, and turns every failure of the provider into an
// llm.ProviderError (through ParseError and ParseStreamError); any other
// failure is a transport error. Its Client also embeds (llm.Embedder,
// POST {base}/embeddings, vectors asked for as floats, a base64 answer
// decoded), with errors read the same way.
//
//	c := &openai.Client{BaseURL: "https://api.groq.com/openai/v1", APIKey: os.Getenv("GROQ_API_KEY")}
//	req := &llm.Request{Model: "llama-3.3-70b-versatile",
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
//			break // the provider's explicit end (or a finish reason then EOF)
//		}
//		if err != nil {
//			return err // error frame, errors.Is(err, llm.ErrStreamTruncated), ...
//		}
//		fmt.Print(ch.Content)
//	}
//
//	e, err := c.Embed(ctx, &llm.EmbedRequest{Model: "text-embedding-3-small", Input: []string{"hi"}})
//	// e.Vectors[0] is the vector of "hi"; e.Usage.InputTokens its tokens
package openai
