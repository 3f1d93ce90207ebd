// Package openai speaks the OpenAI chat completions dialect, which OpenAI,
// Groq, OpenRouter, DeepSeek, Together, Mistral, Cerebras, Fireworks, xAI,
// Ollama, vLLM and llama.cpp all serve: it encodes llm.Request, decodes
// responses and streams, and turns every failure of the provider into an
// llm.ProviderError (through ParseError and ParseStreamError); any other
// failure is a transport error.
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
package openai
