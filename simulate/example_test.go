package simulate_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/simulate"
)

func ExampleStart() {
	srv, err := simulate.Start(simulate.Provider{
		Name:   "groq",
		Models: []string{"llama-3.3-70b-versatile"},
		Style:  simulate.StyleGroq,
		Script: []simulate.Fault{
			{Kind: simulate.RateLimit, RetryAfter: 2 * time.Second},
			{Kind: simulate.DailyQuota},
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	body := `{"model":"llama-3.3-70b-versatile","messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 3; i++ {
		resp, err := http.Post(srv.BaseURL("groq")+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), strings.Contains(string(b), "Hello from groq/llama-3.3-70b-versatile."))
	}
	fmt.Println(srv.Stats().Served("groq", "", simulate.OK), "answered")
	// Output:
	// 429 2 false
	// 429 433 false
	// 200  true
	// 1 answered
}

func ExampleServer_Transport() {
	srv, err := simulate.NewServer(simulate.DayProfile(42)...)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Clock = clock.NewFake(time.Unix(0, 0)) // latencies cost nothing
	client := &http.Client{Transport: srv.Transport()}

	body := `{"model":"` + simulate.OpenRouterExpensive + `","messages":[{"role":"user","content":"hi"}]}`
	resp, err := client.Post(srv.BaseURL(simulate.OpenRouter)+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output: 402
}

// Providers of other dialects are reached at their own base URLs, in their
// own formats, and fail in their own shapes.
func ExampleProvider_dialects() {
	srv, err := simulate.NewServer(
		simulate.Provider{Name: "claude", Dialect: simulate.DialectAnthropic, Script: simulate.Faults(simulate.Unavailable)},
		simulate.Provider{Name: "gemini", Dialect: simulate.DialectGemini,
			Script: []simulate.Fault{{Kind: simulate.RateLimit, RetryAfter: 26 * time.Second}}},
	)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Clock = clock.NewFake(time.Unix(0, 0))
	client := &http.Client{Transport: srv.Transport()}
	send := func(url, body string, header ...string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, strings.Contains(string(b), "overloaded_error"), strings.Contains(string(b), `"retryDelay": "26s"`), strings.Contains(string(b), "Hello from"))
	}
	messages := `{"model":"claude-haiku-4-5","max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`
	send(srv.BaseURL("claude")+"/v1/messages", messages, "x-api-key", "k", "anthropic-version", "2023-06-01")
	send(srv.BaseURL("claude")+"/v1/messages", messages, "x-api-key", "k", "anthropic-version", "2023-06-01")
	generate := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	send(srv.BaseURL("gemini")+"/models/gemini-2.5-flash:generateContent", generate, "x-goog-api-key", "k")
	send(srv.BaseURL("gemini")+"/models/gemini-2.5-flash:generateContent", generate, "x-goog-api-key", "k")
	// Output:
	// 529 true false false
	// 200 false false true
	// 429 false true false
	// 200 false false true
}
